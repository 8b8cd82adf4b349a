#include "egca/sandbox/prefault.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "posix_util.h"
#include "server.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace egca::sandbox {
namespace {

PageRanges& Registered() {
  static PageRanges ranges;
  return ranges;
}

constexpr uint64_t kPresent = 1ull << 63;
constexpr uint64_t kExclusive = 1ull << 56;

// The probe's scan of its own private writable mappings: pages present and mapped by it
// alone. Buffers are reserved before the exercise, so the scan writes little of its own.
bool ScanExclusivePages(std::vector<uint64_t>* entries, std::string* maps, PageRanges* out) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  internal::UniqueFd maps_fd(open("/proc/self/maps", O_RDONLY | O_CLOEXEC));
  internal::UniqueFd pagemap(open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  if (!maps_fd.valid() || !pagemap.valid()) return false;
  maps->clear();
  char buf[4096];
  for (ssize_t n; (n = read(maps_fd.get(), buf, sizeof(buf))) > 0;) maps->append(buf, n);
  size_t pages = 0;
  size_t pos = 0;
  while (pos < maps->size() && pages < kMaxSparePrefaultPages) {
    size_t eol = maps->find('\n', pos);
    if (eol == std::string::npos) eol = maps->size();
    unsigned long start = 0, end = 0;
    char perms[5] = {};
    const std::string line = maps->substr(pos, eol - pos);
    pos = eol + 1;
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &start, &end, perms) != 3) continue;
    if (std::strcmp(perms, "rw-p") != 0) continue;
    if (line.find("[vsyscall]") != std::string::npos || line.find("[vvar") != std::string::npos) {
      continue;
    }
    for (uintptr_t at = start; at < end && pages < kMaxSparePrefaultPages;) {
      const size_t count = std::min<size_t>((end - at) / page, entries->capacity());
      entries->resize(count);
      const off_t offset = static_cast<off_t>(at / page * sizeof(uint64_t));
      const ssize_t got = pread(pagemap.get(), entries->data(), count * sizeof(uint64_t), offset);
      if (got <= 0) break;
      const size_t read_entries = static_cast<size_t>(got) / sizeof(uint64_t);
      for (size_t i = 0; i < read_entries && pages < kMaxSparePrefaultPages; ++i) {
        const uint64_t e = (*entries)[i];
        if ((e & kPresent) == 0 || (e & kExclusive) == 0) continue;
        const uintptr_t p = at + i * page;
        if (!out->empty() && out->back().second == p) {
          out->back().second = p + page;
        } else {
          out->emplace_back(p, p + page);
        }
        ++pages;
      }
      at += read_entries * page;
    }
  }
  return true;
}

}  // namespace

PageRanges ProbeWrittenPages(const std::function<bool()>& exercise) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return {};
  internal::UniqueFd read_end(p[0]), write_end(p[1]);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return {};
  if (pid == 0) {
    read_end.Reset();
    std::vector<uint64_t> entries;
    entries.reserve(1 << 14);
    std::string maps;
    maps.reserve(1 << 16);
    PageRanges ranges;
    ranges.reserve(kMaxSparePrefaultPages);
    bool ok = exercise() && ScanExclusivePages(&entries, &maps, &ranges);
    if (ok) {
      std::string bytes;
      for (const auto& [start, end] : ranges) {
        const uintptr_t range[2] = {start, end};
        bytes.append(reinterpret_cast<const char*>(range), sizeof(range));
      }
      ok = internal::WriteAll(write_end.get(), bytes);
    }
    _exit(ok ? 0 : 1);
  }
  write_end.Reset();
  std::string bytes;
  char buf[65536];
  // A probe that does not finish in time is killed: no list, no prefault, never a hang.
  const double deadline = internal::MonotonicSeconds() + 30.0;
  for (;;) {
    const double left = deadline - internal::MonotonicSeconds();
    pollfd pfd{read_end.get(), POLLIN, 0};
    const int ready = left <= 0 ? 0 : poll(&pfd, 1, static_cast<int>(left * 1000) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      kill(pid, SIGKILL);
      bytes.clear();
      break;
    }
    const ssize_t n = read(read_end.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      bytes.size() % (2 * sizeof(uintptr_t)) != 0) {
    return {};
  }
  PageRanges ranges;
  for (size_t at = 0; at < bytes.size(); at += 2 * sizeof(uintptr_t)) {
    uintptr_t range[2];
    std::memcpy(range, bytes.data() + at, sizeof(range));
    ranges.emplace_back(range[0], range[1]);
  }
  return ranges;
}

void SetSparePrefault(PageRanges ranges) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t pages = 0;
  PageRanges kept;
  for (const auto& [start, end] : ranges) {
    if (start % page != 0 || end % page != 0 || end <= start) continue;
    const size_t n = (end - start) / page;
    if (pages + n > kMaxSparePrefaultPages) break;
    pages += n;
    kept.emplace_back(start, end);
  }
  Registered() = std::move(kept);
}

namespace internal {

size_t PopulateSparePrefault() {
  size_t pages = 0;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (const auto& [start, end] : Registered()) {
    // Errors (a range the server unmapped since, or made read-only) leave it as it is.
    if (madvise(reinterpret_cast<void*>(start), end - start, MADV_POPULATE_WRITE) == 0) {
      pages += (end - start) / page;
    }
  }
  return pages;
}

}  // namespace internal
}  // namespace egca::sandbox
