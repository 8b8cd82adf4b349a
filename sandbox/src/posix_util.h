// Small RAII and I/O helpers over raw POSIX calls (private to the sandbox module).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace egca::sandbox::internal {

// Owns one file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Writes all of `data`, retrying on EINTR/short writes; on a socket uses MSG_NOSIGNAL so a
// dead peer is an error, not SIGPIPE. Returns false on error (errno set).
bool WriteAll(int fd, const void* data, size_t size);
bool WriteAll(int fd, std::string_view data);
// Sends one byte over a Unix socket with `fd` attached (SCM_RIGHTS), retrying on EINTR,
// MSG_NOSIGNAL. Returns false on error (errno set).
bool SendByteWithFd(int sock, char byte, int fd);
// Reads exactly `size` bytes. Returns false on EOF before that or on error (errno = 0 on
// EOF).
bool ReadExact(int fd, void* data, size_t size);

// Every later child is a fork of the server: memory the server freed is in its copy, with
// whatever the freed block held. What a child sent (its output, its records) therefore never
// stays in freed memory:
//   WipeString overwrites the whole allocation of `s` (its capacity, not only its size,
//   and the inline buffer of a short string) with zeros and leaves it empty;
//   AppendWiping appends `data`, and when `s` must grow it wipes the old allocation before
//   it is freed (a plain append would leave every smaller copy behind in the heap).
void WipeString(std::string* s);
void AppendWiping(std::string* s, std::string_view data);

// Monotonic clock in seconds.
double MonotonicSeconds();

// Sets O_NONBLOCK on `fd`.
bool SetNonBlocking(int fd);

// pidfd_open(2); -1 when the kernel lacks it.
int PidfdOpen(pid_t pid);

// Closes every descriptor >= `lowest` except those listed (close_range where available).
void CloseFdsFrom(int lowest);

// Removes `path` and everything below it without following symlinks. Best effort.
void RemoveTree(const std::string& path);
// Removes everything below the directory `path` but keeps the directory. Best effort.
void EmptyDirectoryAt(const std::string& path);

// "mkdir -p" with `mode` for directories it creates.
bool MakeDirs(const std::string& path, mode_t mode);

}  // namespace egca::sandbox::internal
