// The fork server tests' child_main (fork_server_test.cpp), shared with the server program
// exec_test_server.cpp that runs the same suite in exec mode: the payload names the
// behaviour, an optional argument follows a colon.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include <setjmp.h>

#include <cstdint>
#include <fstream>
#include <utility>
#include <vector>

namespace egca::sandbox::testing {

inline bool WriteAllFd(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Writes "ok" or "errno=<name>" for an attempted file creation at `path`.
inline std::string TryCreate(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return fmt::format("errno={}", errno);
  close(fd);
  return "ok";
}

inline sigjmp_buf g_scan_jump;
inline std::vector<std::string> ScanOwnMemoryAll(const std::string& prefix, size_t max_found);

// 32 random lowercase hex digits from /dev/urandom (made in the child: they never pass
// through a request).
inline std::string RandomHex32() {
  unsigned char raw[16] = {};
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, raw, sizeof(raw)) != static_cast<ssize_t>(sizeof(raw))) raw[0] ^= 1;
    close(fd);
  }
  std::string hex;
  for (unsigned char c : raw) hex += fmt::format("{:02x}", c);
  return hex;
}

// One child_main for every test.
inline int TestChild(std::string_view payload, int result_fd) {
  std::string cmd(payload);
  std::string arg;
  if (auto colon = cmd.find(':'); colon != std::string::npos) {
    arg = cmd.substr(colon + 1);
    cmd.resize(colon);
  }
  if (cmd == "exit") return std::atoi(arg.c_str());
  if (cmd == "hello") {
    WriteAllFd(result_fd, "result bytes");
    std::fputs("to stdout", stdout);
    std::fputs("to stderr", stderr);
    return 0;
  }
  if (cmd == "echo_stdin") {
    std::string in;
    char buf[4096];
    ssize_t n;
    while ((n = read(0, buf, sizeof(buf))) > 0) in.append(buf, static_cast<size_t>(n));
    WriteAllFd(result_fd, in);
    return 0;
  }
  if (cmd == "big") {
    // Result and stdout interleaved in chunks: both pipes must be drained concurrently.
    size_t total = std::strtoull(arg.c_str(), nullptr, 10);
    std::string chunk(64 * 1024, 'r');
    std::string out(16 * 1024, 'o');
    for (size_t done = 0; done < total; done += chunk.size()) {
      WriteAllFd(result_fd, chunk.substr(0, std::min(chunk.size(), total - done)));
      WriteAllFd(1, out);
    }
    return 0;
  }
  if (cmd == "sleep") {
    sleep(1000);
    return 0;
  }
  if (cmd == "busy") {
    volatile uint64_t x = 0;
    for (;;) x = x + 1;
  }
  if (cmd == "busy_ignoring_signals") {
    signal(SIGXCPU, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    volatile uint64_t x = 0;
    for (;;) x = x + 1;
  }
  if (cmd == "malloc_loop") {
    // Touch what we allocate: RLIMIT_AS must stop malloc before the machine notices.
    size_t got = 0;
    for (;;) {
      void* p = std::malloc(16 << 20);
      if (p == nullptr) break;
      std::memset(p, 1, 16 << 20);
      got += 16 << 20;
    }
    WriteAllFd(result_fd, fmt::format("ENOMEM after {}", got));
    return 3;
  }
  if (cmd == "flood") {
    std::string line(4096, 'x');
    for (;;) WriteAllFd(1, line);
  }
  if (cmd == "fork") {
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    WriteAllFd(result_fd, "fork returned");
    return 0;
  }
  if (cmd == "fork_sigsys_blocked") {
    // What glibc's posix_spawn does around its clone: block every signal first.
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, nullptr);
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    return 0;
  }
  if (cmd == "connect") {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(22);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    WriteAllFd(result_fd, fmt::format("socket={} connect={} errno={}", s, rc, errno));
    return 0;
  }
  if (cmd == "kill_parent") {
    kill(getppid(), SIGKILL);
    WriteAllFd(result_fd, "still here");
    return 0;
  }
  if (cmd == "kill_group") {
    kill(0, SIGKILL);
    return 0;
  }
  if (cmd == "execve") {
    char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
    execv("/bin/true", argv);
    return 9;
  }
  if (cmd == "syscall") {
    // arg: a system call number, called with arguments that make it fail harmlessly
    // (null pointers, fd -1, pid 1 with signal 0) should the filter ever let it through.
    long nr = std::strtol(arg.c_str(), nullptr, 10);
    long rc = ::syscall(nr, 0, 0, 0, 0, 0, 0);
    WriteAllFd(result_fd, fmt::format("returned {} errno={}", rc, errno));
    return 0;
  }
  if (cmd == "signal_self") {
    // Signals to itself stay allowed: the filter's own-pid rules (patched per child).
    static volatile sig_atomic_t got = 0;
    signal(SIGUSR1, [](int) { got = 1; });
    int a = kill(getpid(), 0);
    int b = static_cast<int>(::syscall(SYS_tgkill, getpid(), ::syscall(SYS_gettid), 0));
    int c = raise(SIGUSR1);
    WriteAllFd(result_fd, fmt::format("{} {} {} {}", a, b, c, static_cast<int>(got)));
    return 0;
  }
  if (cmd == "touch_then_sleep") {
    // arg: bytes to allocate and touch (page faults), then 30 ms of wall time.
    size_t bytes = std::strtoull(arg.c_str(), nullptr, 10);
    auto* p = static_cast<char*>(std::malloc(bytes));
    if (p == nullptr) return 2;
    std::memset(p, 1, bytes);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    return p[bytes - 1] == 1 ? 0 : 3;
  }
  if (cmd == "setsid") {
    setsid();
    return 0;
  }
  if (cmd == "write_files") {
    // arg: the absolute path outside the private dir to try.
    std::string home = std::getenv("HOME") ? std::getenv("HOME") : "";
    char cwd[4096] = {};
    getcwd(cwd, sizeof(cwd));
    std::string report =
        fmt::format("outside={} home={} cwd={} home_is_cwd={}", TryCreate(arg),
                    TryCreate(home + "/in_home.txt"), TryCreate("in_cwd.txt"), home == cwd);
    WriteAllFd(result_fd, report);
    return 0;
  }
  if (cmd == "read") {
    // arg: a path to read a few bytes from; reports "errno=E" when it cannot be opened.
    int fd = open(arg.c_str(), O_RDONLY);
    if (fd < 0) {
      WriteAllFd(result_fd, fmt::format("errno={}", errno));
      return 0;
    }
    char buf[64];
    ssize_t n = read(fd, buf, sizeof(buf));
    close(fd);
    // "opened" first: for /proc/<pid>/mem opening is the access check (offset 0 never reads).
    WriteAllFd(result_fd, n < 0 ? fmt::format("opened, read errno={}", errno)
                                : fmt::format("opened, read {}", n));
    return 0;
  }
  if (cmd == "deep") {
    // Nests `arg` directories below the private dir (a file at the bottom, one locked
    // directory on the way) to leave something hard to clean up.
    int levels = std::atoi(arg.c_str());
    for (int i = 0; i < levels; ++i) {
      if (mkdir("d", 0700) != 0 || chdir("d") != 0) return 1;
    }
    close(open("leaf.txt", O_WRONLY | O_CREAT, 0600));
    if (mkdir("locked", 0700) != 0 || chdir("..") != 0) return 2;
    chmod("d/locked", 0);
    WriteAllFd(result_fd, TryCreate("../../x.txt"));
    return 0;
  }
  if (cmd == "list_cwd") {
    std::string list;
    if (DIR* d = opendir(".")) {
      while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") list += name + " ";
      }
      closedir(d);
    }
    WriteAllFd(result_fd, list);
    return 0;
  }
  if (cmd == "payload_size") {
    // The payload as the child got it: its size and a checksum.
    unsigned long long sum = 0;
    for (unsigned char c : payload) sum = sum * 131 + c;
    WriteAllFd(result_fd, fmt::format("{} {}", payload.size(), sum));
    return 0;
  }
  if (cmd == "ids") {
    // Who the child is and the limits it runs under (soft values).
    auto soft = [](int resource) {
      rlimit r{};
      getrlimit(resource, &r);
      return static_cast<unsigned long long>(r.rlim_cur);
    };
    WriteAllFd(result_fd, fmt::format("uid={} pid={} nproc={} as={} cpu={} nofile={}", getuid(),
                                      getpid(), soft(RLIMIT_NPROC), soft(RLIMIT_AS),
                                      soft(RLIMIT_CPU), soft(RLIMIT_NOFILE)));
    return 0;
  }
  if (cmd == "env") {
    std::string all;
    for (char** e = environ; *e != nullptr; ++e) all += std::string(*e) + "\n";
    WriteAllFd(result_fd, all);
    return 0;
  }
  if (cmd == "fds") {
    // Open descriptors as seen by the child.
    std::string list;
    if (DIR* d = opendir("/proc/self/fd")) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        if (std::atoi(e->d_name) == dirfd(d)) continue;
        list += std::string(e->d_name) + " ";
      }
      closedir(d);
    }
    WriteAllFd(result_fd, list);
    return 0;
  }
  if (cmd == "escape") {
    // Without the seccomp filter: leave the process group and the session, double-fork,
    // and report the grandchild's pid; it sleeps for a long time.
    int p[2];
    if (pipe(p) != 0) return 1;
    pid_t child = fork();
    if (child == 0) {
      setsid();
      pid_t grandchild = fork();
      if (grandchild == 0) {
        close(p[0]);
        std::string me = std::to_string(getpid());
        WriteAllFd(p[1], me);
        close(p[1]);
        for (;;) sleep(1000);
      }
      _exit(0);
    }
    close(p[1]);
    char buf[32] = {};
    ssize_t n = read(p[0], buf, sizeof(buf) - 1);
    if (n > 0) WriteAllFd(result_fd, std::string(buf, static_cast<size_t>(n)));
    waitpid(child, nullptr, 0);
    return 0;
  }
  if (cmd == "threads") {
    // Start up to `arg` sleeping threads; report how many started.
    int want = std::atoi(arg.c_str());
    int started = 0;
    for (int i = 0; i < want; ++i) {
      pthread_t t;
      auto body = [](void*) -> void* {
        for (;;) sleep(1000);
        return nullptr;
      };
      if (pthread_create(&t, nullptr, body, nullptr) != 0) break;
      ++started;
    }
    WriteAllFd(result_fd, std::to_string(started));
    return 0;
  }
  if (cmd == "thread_writes_after_return") {
    // Its job done, the main thread returns while a thread of its keeps creating files in
    // the private directory and writing to stdout: nothing the thread does may reach the
    // next job.
    static std::atomic<bool> started{false};
    started = false;
    pthread_t t;
    pthread_create(
        &t, nullptr,
        [](void*) -> void* {
          for (unsigned n = 0;; ++n) {
            if (n < 20000) {
              close(open(fmt::format("late-{}", n).c_str(), O_WRONLY | O_CREAT, 0600));
              if (n % 64 == 0) WriteAllFd(1, "late ");
            }
            started = true;
          }
          return nullptr;
        },
        nullptr);
    while (!started) sched_yield();
    WriteAllFd(result_fd, "returned");
    return 0;
  }
  if (cmd == "thread_exit_main") {
    // The main thread leaves; a detached thread keeps the process alive until the wall
    // limit: the whole thread group must be killed.
    pthread_t t;
    pthread_create(
        &t, nullptr,
        [](void*) -> void* {
          for (;;) sleep(1000);
          return nullptr;
        },
        nullptr);
    syscall(SYS_exit, 0);  // ends the calling thread only
    return 0;
  }
  if (cmd == "peer_write") {
    // arg: bytes for the peer descriptor (fd 4); then waits for its answer and reports it.
    if (!WriteAllFd(4, arg)) return 5;
    shutdown(4, SHUT_WR);
    char buf[256] = {};
    ssize_t n = read(4, buf, sizeof(buf));
    WriteAllFd(result_fd, n < 0 ? fmt::format("errno={}", errno) : std::string(buf, n));
    return 0;
  }
  if (cmd == "peer_echo") {
    // Reads the peer's bytes until EOF, answers "got <bytes>".
    std::string in;
    char buf[256];
    ssize_t n;
    while ((n = read(4, buf, sizeof(buf))) > 0) in.append(buf, static_cast<size_t>(n));
    WriteAllFd(4, "got " + in);
    WriteAllFd(result_fd, in);
    return 0;
  }
  if (cmd == "segv") {
    volatile int* p = nullptr;
    return *p;
  }
  if (cmd == "plant_small") {
    // arg: a prefix. As "plant", one marker per channel written once: the outcome and its
    // reply frame stay small (in the server's heap, below the mmap threshold).
    const std::string out = arg + RandomHex32(), err = arg + RandomHex32(),
                      res = arg + RandomHex32();
    WriteAllFd(1, out + "\n");
    WriteAllFd(2, err + "\n");
    WriteAllFd(result_fd, "\n" + out + "\n" + err + "\n" + res);
    return 0;
  }
  if (cmd == "plant") {
    // arg: a prefix. Three markers (prefix + 32 random hex digits), one per channel, each
    // sent in many pieces and at sizes that make the server's buffers grow (the stdout
    // one is past the mmap threshold at the end, the others stay in the heap); the
    // result lists them.
    const std::string out = arg + RandomHex32(), err = arg + RandomHex32(),
                      res = arg + RandomHex32();
    // A few bytes at a time with pauses, so the server reads each channel in many small
    // pieces and its buffers grow step by step (each step frees a smaller copy).
    const std::string pad(300, '.');
    for (int i = 0; i < 300; ++i) {
      WriteAllFd(1, out + pad + "\n");
      WriteAllFd(2, err + pad + "\n");
      WriteAllFd(result_fd, res + pad + ";");
      if (i % 10 == 0) usleep(200);
    }
    for (int i = 0; i < 4000; ++i) WriteAllFd(1, out + (i % 7 == 0 ? "\n" : " "));
    WriteAllFd(result_fd, "\n" + out + "\n" + err + "\n" + res);
    return 0;
  }
  if (cmd == "scan_all") {
    // arg: a prefix. Every distinct prefix + 32 hex digits in this process's memory, one
    // a line, or "not found".
    std::vector<std::string> found = ScanOwnMemoryAll(arg, 64);
    std::string text;
    for (const std::string& f : found) text += f + "\n";
    WriteAllFd(result_fd, found.empty() ? std::string("not found") : text);
    return 0;
  }
  return 99;
}

// Every distinct PREFIX followed by 32 lowercase hex digits anywhere in this process's
// readable memory (at most `max_found`). Reads the mappings /proc/self/maps lists through
// pointers (as ctypes would): /proc/self/mem of a non-dumpable child belongs to root, which
// the child is not. A mapping that faults (a file shorter than its mapping) is skipped.
// What it finds is copied into the returned strings only after the scan: nothing the scan
// makes can be found by it.
inline std::vector<std::string> ScanOwnMemoryAll(const std::string& prefix, size_t max_found) {
  std::vector<std::string> found;
  std::ifstream maps("/proc/self/maps");
  if (!maps) return {"cannot read /proc/self/maps"};
  std::vector<std::pair<uintptr_t, uintptr_t>> regions;
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long start = 0, end = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &start, &end, perms) != 3) continue;
    if (perms[0] != 'r' || line.find("[v") != std::string::npos) continue;  // [vvar], [vdso]...
    regions.emplace_back(start, end);
  }
  // Positions first (no allocation while scanning), strings after.
  std::vector<const char*> hits(max_found * 4);
  struct sigaction on_fault {
  }, old_segv{}, old_bus{};
  on_fault.sa_handler = [](int) { siglongjmp(g_scan_jump, 1); };
  sigemptyset(&on_fault.sa_mask);
  on_fault.sa_flags = SA_NODEFER;
  sigaction(SIGSEGV, &on_fault, &old_segv);
  sigaction(SIGBUS, &on_fault, &old_bus);
  // Volatile: both change between sigsetjmp and a fault's siglongjmp.
  volatile size_t r = 0;
  volatile size_t hit_count = 0;
  for (; r < regions.size() && hit_count < hits.size(); r = r + 1) {
    if (sigsetjmp(g_scan_jump, 1) != 0) continue;  // this region faulted
    const auto [start, end] = regions[r];
    const char* base = reinterpret_cast<const char*>(start);
    std::string_view region(base, end - start);
    for (size_t at = region.find(prefix); at != std::string_view::npos;
         at = region.find(prefix, at + 1)) {
      const size_t digits = at + prefix.size();
      if (digits + 32 > region.size()) break;
      bool hex = true;
      for (size_t i = 0; i < 32 && hex; ++i) {
        const char c = region[digits + i];
        hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      }
      if (hex) {
        hits[hit_count] = base + at;
        hit_count = hit_count + 1;
        if (hit_count == hits.size()) break;
      }
    }
  }
  sigaction(SIGSEGV, &old_segv, nullptr);
  sigaction(SIGBUS, &old_bus, nullptr);
  for (size_t i = 0; i < hit_count; ++i) {
    std::string text(hits[i], prefix.size() + 32);
    if (std::find(found.begin(), found.end(), text) == found.end() && found.size() < max_found) {
      found.push_back(std::move(text));
    }
  }
  return found;
}

// The first PREFIX followed by 32 lowercase hex digits in this process's memory, or
// "not found".
inline std::string ScanOwnMemory(const std::string& prefix) {
  std::vector<std::string> found = ScanOwnMemoryAll(prefix, 1);
  return found.empty() ? std::string("not found") : found.front();
}

}  // namespace egca::sandbox::testing
