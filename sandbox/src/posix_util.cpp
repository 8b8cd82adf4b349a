#include "posix_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace egca::sandbox::internal {

bool WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool WriteAll(int fd, std::string_view data) { return WriteAll(fd, data.data(), data.size()); }

void WipeString(std::string* s) {
  // resize() makes every byte up to the capacity part of the string (no reallocation), so
  // the whole block is written through data().
  s->resize(s->capacity());
  explicit_bzero(s->data(), s->size());
  std::string().swap(*s);
}

void AppendWiping(std::string* s, std::string_view data) {
  if (data.size() > s->capacity() - s->size()) {
    std::string bigger;
    bigger.reserve(std::max(s->size() + data.size(), 2 * s->capacity()));
    bigger.append(*s);
    WipeString(s);
    s->swap(bigger);
  }
  s->append(data);
}

bool SendByteWithFd(int sock, char byte, int fd) {
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  ssize_t sent;
  do {
    sent = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  return sent == 1;
}

bool ReadExact(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::read(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = 0;
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

double MonotonicSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

void CloseFdsFrom(int lowest) {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, static_cast<unsigned>(lowest), ~0u, 0u) == 0) return;
#endif
  long max_fd = sysconf(_SC_OPEN_MAX);
  if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
  for (long fd = lowest; fd < max_fd; ++fd) ::close(static_cast<int>(fd));
}

namespace {

// Directories nested deeper than this are moved up to the top directory and removed by
// a later pass: recursion (one open descriptor per level) stays bounded however deep a
// hostile program nests its directories.
constexpr int kMaxDepth = 64;

// Empties the directory open as `dir_fd` (consumed). `top_fd` is the directory being
// emptied; sets *moved when it moved a too-deep directory there.
void EmptyDirectory(int dir_fd, int depth, int top_fd, bool* moved) {
  DIR* dir = fdopendir(dir_fd);
  if (dir == nullptr) {
    ::close(dir_fd);
    return;
  }
  // Entries are collected first: unlinking while iterating may skip entries.
  std::string names;
  while (dirent* e = readdir(dir)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    names.append(name).push_back('\0');
  }
  int fd = dirfd(dir);
  static unsigned counter = 0;
  for (size_t pos = 0; pos < names.size();) {
    std::string name(names.c_str() + pos);
    pos += name.size() + 1;
    if (unlinkat(fd, name.c_str(), 0) == 0) continue;
    if (errno != EISDIR && errno != EPERM) continue;
    if (depth >= kMaxDepth) {
      std::string flat = ".egca-deep-" + std::to_string(getpid()) + "-" + std::to_string(++counter);
      if (renameat(fd, name.c_str(), top_fd, flat.c_str()) == 0) *moved = true;
      continue;
    }
    int sub = openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0 && errno == EACCES) {
      // The child may have chmod'ed its own directory to 000.
      fchmodat(fd, name.c_str(), 0700, 0);
      sub = openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (sub < 0) continue;
    EmptyDirectory(sub, depth + 1, top_fd, moved);
    unlinkat(fd, name.c_str(), AT_REMOVEDIR);
  }
  closedir(dir);
}

}  // namespace

void EmptyDirectoryAt(const std::string& path) {
  // Each pass removes up to kMaxDepth levels; deeper parts were moved to the top.
  for (int pass = 0; pass < 100000; ++pass) {
    int top = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (top < 0) return;
    int fd = ::dup(top);
    bool moved = false;
    if (fd >= 0) EmptyDirectory(fd, 0, top, &moved);
    ::close(top);
    if (!moved) return;
  }
}

void RemoveTree(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    ::unlink(path.c_str());
    return;
  }
  ::close(fd);
  EmptyDirectoryAt(path);
  ::rmdir(path.c_str());
}

bool MakeDirs(const std::string& path, mode_t mode) {
  if (path.empty()) return false;
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) return false;
  }
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace egca::sandbox::internal
