#include "server.h"

#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cxxabi.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "isolation.h"
#include "posix_util.h"
#include "wire.h"

namespace egca::sandbox::internal {
namespace {

constexpr int kServerSocketFd = kServerChannelFd;  // the server's end of the socketpair,
                                                   // and the child's result_fd (dup2
                                                   // replaces it in the child)
constexpr int kChildResultFd = 3;
constexpr double kCpuCheckInterval = 0.05;  // seconds between server-side CPU readings
// Seconds between attempts to pick up the child's seccomp notification listener.
constexpr double kHandoverInterval = 0.005;

enum class KillReason { kNone, kWall, kCpu, kOutput, kViolation };
constexpr int kChildNotifyFd = 5;  // the child's end of the listener hand-over socket
constexpr int kChildJobFd = 6;     // a spare child's end of its job socket, until the job

// A child forked and isolated ahead of its job ("spare"): while one child runs, the server
// forks the next one, which drops its uid, applies Landlock and its seccomp filter and then
// waits for a job on its job socket, so that fork and isolation are off the caller's
// critical path. It runs nothing but the sandbox's own code until its job arrives; the
// job's limits (rlimits) are applied when it does, before child_main. Its state is the
// server's at the fork, which holds no request: the server forks it only after the
// current job went to its child and the server's copies of the request were erased.
struct Spare {
  pid_t pid = 0;
  int slot = 0;  // RunUidForServer(self, slot): alternates, so the running child and the
                 // spare never share a uid (RLIMIT_NPROC counts per uid)
  UniqueFd pidfd;
  UniqueFd job;                // the server's end of the job socket
  UniqueFd read_end[4];        // 1, 2, 3: stdout, stderr, result
  UniqueFd notify_server_end;  // the seccomp listener comes over it (or invalid)
  // Its own shared page (a fresh mapping per child: a child never maps the page of a child
  // forked after it, so the running program cannot write the spare's).
  ViolationRecord* record = nullptr;
  dev_t dir_dev = 0;  // the private directory it entered (cwd, Landlock rule)
  ino_t dir_ino = 0;
  ~Spare() {
    if (record != nullptr) munmap(record, sizeof(ViolationRecord));
  }
};

struct ServerState {
  const ForkServerOptions* options;
  Capabilities caps;
  pid_t self;
  std::string server_dir;  // <scratch_root>/srv-<pid>
  std::string work_dir;    // <server_dir>/work: the current child's private directory
  std::vector<sock_filter> seccomp_program;  // kTrap filter, compiled once; each child
                                             // patches its copy
  std::vector<sock_filter> notify_program;   // kNotify filter (empty: not available)
  seccomp_notif* notification = nullptr;     // receive buffer (seccomp_notify_alloc)
  std::unique_ptr<Spare> spare;              // the next job's child, when one is ready
  bool work_dir_empty = false;               // emptied and checked since the last child ran there
};

// Everything the child needs after fork (its copy-on-write copy of the server's memory;
// the child patches its copy of the seccomp program and nothing else).
struct ChildSetup {
  ServerState* state;
  ViolationRecord* record;  // its own shared page
  int slot;
  // stdout, stderr, result, notify socket (or -1), job socket at indices 1, 2, 3, 5, 6:
  // they become those descriptors. 0 (stdin) and 4 (peer) come with the job.
  int fds[7];
};

// What the server sends a spare for its job: this header, then the payload, in a memfd
// (any size, and the server never blocks on a child that is still isolating itself).
struct JobHeader {
  Limits limits;
  uint64_t payload_size;
};

// CLOCK_MONOTONIC through the vDSO: no system call, so nothing the filter sees.
int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

[[noreturn]] void ChildFail(ViolationRecord* record, const std::string& what) {
  record->setup_failed = 1;
  std::snprintf(record->setup_error, sizeof(record->setup_error), "%s (errno %d: %s)", what.c_str(),
                errno, std::strerror(errno));
  _exit(kIsolationFailedExit);
}

// A job up to this size (JobHeader + payload) travels in the hand-over message itself;
// a larger one in a memfd. Either way the server never blocks on a spare that is still
// isolating itself (the socket's queue holds one such message).
constexpr size_t kInlineJobBytes = 32 << 10;

// The spare's side of the job hand-over: one message, 'I' + JobHeader + payload (inline)
// or 'M' (the job in a memfd, the last descriptor), with the stdin memfd and, optionally,
// the peer socket (SCM_RIGHTS, in that order). `buffer` (kInlineJobBytes + 1) is reserved
// before the job arrives. False: the server closed the socket (the spare was discarded)
// or sent something else.
bool ReceiveJob(int sock, std::string* buffer, std::string* payload, Limits* limits, int* stdin_fd,
                int* peer_fd) {
  int fds[3] = {-1, -1, -1};
  int count = 0;
  int flags = 0;
  const ssize_t got =
      ReceiveWithFds(sock, buffer->data(), buffer->size(), 0, fds, 3, &count, &flags);
  if (got < 1 || (flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) return false;
  const char kind = (*buffer)[0];
  const bool inline_job = kind == 'I';
  if ((!inline_job && kind != 'M') || count < (inline_job ? 1 : 2) || count > 3) return false;
  JobHeader header{};
  if (inline_job) {
    if (static_cast<size_t>(got) < 1 + sizeof(header)) return false;
    std::memcpy(&header, buffer->data() + 1, sizeof(header));
    if (header.payload_size != static_cast<size_t>(got) - 1 - sizeof(header)) return false;
    payload->assign(buffer->data() + 1 + sizeof(header), header.payload_size);
    explicit_bzero(buffer->data(), static_cast<size_t>(got));
  } else {
    UniqueFd job(fds[count - 1]);
    if (pread(job.get(), &header, sizeof(header), 0) != static_cast<ssize_t>(sizeof(header))) {
      return false;
    }
    payload->resize(header.payload_size);
    size_t done = 0;
    while (done < header.payload_size) {
      ssize_t n = pread(job.get(), payload->data() + done, header.payload_size - done,
                        static_cast<off_t>(sizeof(header) + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    --count;
  }
  *limits = header.limits;
  *stdin_fd = fds[0];
  *peer_fd = count == 2 ? fds[1] : -1;
  return true;
}

// A spare child: isolation first (everything but the job's limits), then it waits for its
// job, applies the job's limits and runs child_main.
[[noreturn]] void ChildMainOuter(const ChildSetup& setup) {
  ServerState& state = *setup.state;
  ViolationRecord* record = setup.record;
  record->started_ns = MonotonicNs();
  // Die with the server; the server is single-threaded, so "parent thread" is the server.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != state.self) _exit(kIsolationFailedExit);
  setpgid(0, 0);
  const bool notify = setup.fds[kChildNotifyFd] >= 0;
  constexpr int kCount = 7;
  int moved[kCount];
  for (int i = 0; i < kCount; ++i) {
    // Above every target number first, so no dup2 below clobbers a source.
    moved[i] = setup.fds[i] < 0 ? -1 : fcntl(setup.fds[i], F_DUPFD, 16);
    if (setup.fds[i] >= 0 && moved[i] < 0) ChildFail(record, "fcntl(F_DUPFD)");
  }
  for (int i = 0; i < kCount; ++i) {
    if (moved[i] >= 0) {
      if (dup2(moved[i], i) != i) ChildFail(record, "dup2");
    } else {
      close(i);  // stdin and the peer come with the job; an absent listener socket
    }
  }
  // fd 5 (notify) is closed by IsolateChild; fd 6 (job) once the job arrived.
  CloseFdsFrom(kCount);
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  // A file over RLIMIT_FSIZE becomes an EFBIG error in the program instead of a kill,
  // whatever warm-up did with the signal.
  signal(SIGXFSZ, SIG_IGN);
  if (chdir(state.work_dir.c_str()) != 0) ChildFail(record, "chdir to the private dir");

  ChildPlan plan{};
  plan.work_dir = state.work_dir;
  plan.drop_uid = state.caps.uid_drop;
  plan.run_uid = RunUidForServer(state.self, setup.slot);
  plan.server_pid = state.self;
  plan.drop_capabilities = state.caps.user_namespace;
  plan.landlock_abi = state.caps.landlock_abi;
  plan.readable_paths = state.options->confine_reads ? &state.options->readable_paths : nullptr;
  plan.seccomp = state.caps.seccomp;
  plan.seccomp_program = &state.seccomp_program;
  plan.notify_program = notify ? &state.notify_program : nullptr;
  plan.notify_sock = notify ? kChildNotifyFd : -1;
  plan.violation = record;
  std::string error = IsolateChild(plan);
  if (!error.empty()) ChildFail(record, error);
  // Its own copies of the pages a job's child writes anyway (prefault.h), while it waits.
  PopulateSparePrefault();
  record->isolated_ns = MonotonicNs();
  rusage ready{};
  getrusage(RUSAGE_SELF, &ready);
  record->ready_minflt = ready.ru_minflt;

  // The job. A closed socket: the server discarded this spare.
  std::string buffer(kInlineJobBytes + 1, '\0');
  std::string payload;
  Limits limits;
  int stdin_fd = -1, peer_fd = -1;
  if (!ReceiveJob(kChildJobFd, &buffer, &payload, &limits, &stdin_fd, &peer_fd)) _exit(0);
  close(kChildJobFd);
  error = ApplyChildLimits(limits, state.caps.uid_drop);
  if (!error.empty()) ChildFail(record, error);
  // Received descriptors take the lowest free numbers, in order: stdin lands on 0 and the
  // peer on 4 (kChildPeerFd) without a dup2, unless the numbering differs.
  if (stdin_fd != 0) {
    if (dup2(stdin_fd, 0) != 0) ChildFail(record, "dup2 stdin");
    close(stdin_fd);
  }
  if (peer_fd >= 0 && peer_fd != kChildPeerFd) {
    if (dup2(peer_fd, kChildPeerFd) != kChildPeerFd) ChildFail(record, "dup2 peer");
    close(peer_fd);
  }
  record->job_ns = MonotonicNs();
  // The first byte on the result channel says that isolation is complete. Written before
  // the program runs, so the program cannot take it back: a setup failure reported in the
  // shared page after it is the program's forgery, not an egca error.
  const char marker = kIsolatedMarker;
  if (write(kChildResultFd, &marker, 1) != 1) ChildFail(record, "writing the result channel");

  int rc = 70;
  try {
    rc = state.options->child_main(payload, kChildResultFd);
  } catch (abi::__forced_unwind&) {
    throw;  // pthread_exit() on the main thread: the process lives on in its other threads
  } catch (...) {
    rc = 70;  // EX_SOFTWARE: child_main must not throw
  }
  record->main_done_ns = MonotonicNs();
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(rc & 0xff);
}

// Kills and reaps every process left below the server (the server is a child subreaper,
// so orphans of a child that escaped its process group end up here). With the seccomp
// filter there are none; this is the net for install_seccomp = false. `keep`: the spare
// (forked by the server itself, waiting for its job), or 0.
void SweepOrphans(pid_t self, pid_t keep = 0) {
  std::string path = fmt::format("/proc/{}/task/{}/children", self, self);
  for (int round = 0; round < 1000; ++round) {
    std::vector<pid_t> pids;
    if (FILE* f = std::fopen(path.c_str(), "re")) {
      int pid = 0;
      while (std::fscanf(f, "%d", &pid) == 1) {
        if (pid != keep) pids.push_back(pid);
      }
      std::fclose(f);
    }
    if (pids.empty()) break;
    for (pid_t pid : pids) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    }
    for (pid_t pid : pids) waitpid(pid, nullptr, __WALL);
  }
  if (keep != 0) return;  // waitpid(-1) could reap the spare
  while (waitpid(-1, nullptr, WNOHANG | __WALL) > 0) {
  }
}

double ProcessCpuSeconds(pid_t pid) {
  clockid_t clock;
  if (clock_getcpuclockid(pid, &clock) != 0) return 0;
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

constexpr int kMaxReadsPerDrain = 16;

class OutputCollector {
 public:
  explicit OutputCollector(const Limits& limits) : limits_(limits) {}

  // Reads what is available from `fd` (non-blocking), at most kMaxReadsPerDrain chunks so
  // a child writing as fast as the server reads cannot keep it from checking its limits.
  // Returns false at EOF.
  // What it read goes into the outcome with AppendWiping, and the stack buffer is wiped
  // before it returns: the next spare is forked from this process (posix_util.h).
  bool Drain(int fd, int which, ChildOutcome* outcome, int max_reads = kMaxReadsPerDrain) {
    char buf[65536];
    size_t used = 0;  // bytes of `buf` that held the child's data
    struct WipeBuffer {
      char* data;
      const size_t& used;
      ~WipeBuffer() { explicit_bzero(data, used); }
    } wipe{buf, used};
    for (int reads = 0; reads < max_reads && !over_limit_; ++reads) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0) return errno == EAGAIN || errno == EINTR;
      if (n == 0) return false;
      auto size = static_cast<uint64_t>(n);
      used = std::max(used, static_cast<size_t>(n));
      if (which == kChildResultFd) {
        // One byte more than the limit: the isolation marker the server strips.
        const uint64_t limit = limits_.result_bytes + 1;
        uint64_t room = limit - std::min<uint64_t>(outcome->result.size(), limit);
        if (size > room) outcome->result_truncated = true;
        AppendWiping(&outcome->result, std::string_view(buf, std::min(size, room)));
        continue;
      }
      uint64_t room = limits_.output_bytes - std::min(output_total_, limits_.output_bytes);
      std::string& sink = which == 1 ? outcome->stdout_data : outcome->stderr_data;
      AppendWiping(&sink, std::string_view(buf, std::min(size, room)));
      output_total_ += size;
      if (output_total_ > limits_.output_bytes) over_limit_ = true;
    }
    return true;
  }
  bool over_limit() const { return over_limit_; }

 private:
  const Limits& limits_;
  uint64_t output_total_ = 0;
  bool over_limit_ = false;
};

// Receives one descriptor sent with SCM_RIGHTS without blocking; -1 if none arrived
// (errno EAGAIN: not yet).
int ReceiveFd(int sock) {
  char data;
  iovec iov{&data, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t got = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (got == 0) errno = EPIPE;  // the child closed its end without sending
  if (got <= 0) return -1;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  if (cmsg == nullptr || cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) {
    return -1;
  }
  int fd;
  std::memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
  return fd;
}

void KillGroup(pid_t pid) {
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
}

// True when `path` is a directory holding nothing (no entry but . and ..).
bool DirectoryIsEmpty(const std::string& path) {
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return false;
  bool empty = true;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  closedir(d);
  return empty;
}

// Makes the private directory exist, empty, owned by the children's uid and mode 0700.
// It is kept between runs and emptied, not re-created: on a disk-backed scratch root
// (no mount namespace) mkdir + chown + rmdir cost ~3 ms per run on ext4, emptying an
// empty directory almost nothing. Whatever the last child left in its place (a symlink,
// a file, changed permissions) is replaced. `slot`: whose uid (RunUidForServer). `*out`:
// the directory's identity (a spare that entered another one is discarded).
std::string PrepareWorkDir(ServerState& state, int slot, struct stat* out) {
  const char* dir = state.work_dir.c_str();
  uid_t uid = state.caps.uid_drop ? RunUidForServer(state.self, slot) : geteuid();
  gid_t gid = state.caps.uid_drop ? static_cast<gid_t>(uid) : getegid();
  struct stat st {};
  if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
    // Emptied (and found empty) after the last child was reaped: nothing wrote there since.
    if (!state.work_dir_empty) EmptyDirectoryAt(state.work_dir);
  } else {
    RemoveTree(state.work_dir);
    if (mkdir(dir, 0700) != 0) return fmt::format("mkdir {}: {}", dir, std::strerror(errno));
    if (lstat(dir, &st) != 0) return fmt::format("stat {}: {}", dir, std::strerror(errno));
  }
  if ((st.st_uid != uid || st.st_gid != gid) && chown(dir, uid, gid) != 0) {
    return fmt::format("chown {}: {}", dir, std::strerror(errno));
  }
  if ((st.st_mode & 07777) != 0700 && chmod(dir, 0700) != 0) {
    return fmt::format("chmod {}: {}", dir, std::strerror(errno));
  }
  *out = st;
  return {};
}

// Server-side clock readings (seconds) and the child's own (the shared record, ns) into
// phases, as the caller waits for them: prepare (the server's own work for the request,
// without a fork), fork (a fork the request had to wait for: 0 when a spare was ready),
// isolate (from the job's dispatch to the program's start: the spare's job hand-over and
// limits, plus what was left of its isolation), main, exit + reap, collect. The child's
// values are clamped into [dispatch, reap]: the program can overwrite them.
void FillPhases(const ViolationRecord& record, double prepare_start, double fork_seconds,
                double dispatched, double reaped, double collected, ChildPhases* phases) {
  auto child_time = [&](int64_t ns) {
    return ns <= 0 ? 0.0 : std::clamp(static_cast<double>(ns) * 1e-9, dispatched, reaped);
  };
  double job = child_time(record.job_ns);
  double main_done = child_time(record.main_done_ns);
  phases->fork = fork_seconds;
  phases->prepare = std::max(0.0, dispatched - prepare_start - fork_seconds);
  if (job > 0) phases->isolate = job - dispatched;
  if (job > 0 && main_done >= job) phases->main = main_done - job;
  if (main_done > 0) phases->exit = reaped - main_done;
  phases->collect = collected - reaped;
}

// Forks a spare child for `slot` (ChildMainOuter): it isolates itself and waits for a job.
// The private directory must exist.
std::string ForkSpare(ServerState& state, int slot) {
  auto spare = std::make_unique<Spare>();
  spare->slot = slot;
  void* page = mmap(nullptr, sizeof(ViolationRecord), PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return fmt::format("mmap: {}", std::strerror(errno));
  spare->record = static_cast<ViolationRecord*>(page);
  struct stat st {};
  if (stat(state.work_dir.c_str(), &st) != 0) {
    return fmt::format("stat {}: {}", state.work_dir, std::strerror(errno));
  }
  spare->dir_dev = st.st_dev;
  spare->dir_ino = st.st_ino;
  UniqueFd write_end[4];
  for (int i = 1; i < 4; ++i) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return fmt::format("pipe2: {}", std::strerror(errno));
    spare->read_end[i].Reset(p[0]);
    write_end[i].Reset(p[1]);
    SetNonBlocking(p[0]);
  }
  // Bigger pipes: fewer wake-ups when a child writes a large trace.
  fcntl(spare->read_end[kChildResultFd].get(), F_SETPIPE_SZ, 1 << 20);
  // The child hands its seccomp notification listener over this socket.
  UniqueFd notify_child_end;
  if (!state.notify_program.empty()) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      return fmt::format("socketpair: {}", std::strerror(errno));
    }
    spare->notify_server_end.Reset(sv[0]);
    notify_child_end.Reset(sv[1]);
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return fmt::format("socketpair: {}", std::strerror(errno));
  }
  spare->job.Reset(sv[0]);
  UniqueFd job_child_end(sv[1]);
  std::fflush(nullptr);  // nothing buffered in the server may be written twice
  ChildSetup setup{&state,
                   spare->record,
                   slot,
                   {-1, write_end[1].get(), write_end[2].get(), write_end[3].get(), -1,
                    notify_child_end.get(), job_child_end.get()}};
  pid_t pid = fork();
  if (pid < 0) return fmt::format("fork: {}", std::strerror(errno));
  if (pid == 0) ChildMainOuter(setup);
  // The page is shared with this child only: a spare forked later (while this child runs
  // its job) must not map it, or the running program could write into the next one's
  // memory.
  madvise(page, sizeof(ViolationRecord), MADV_DONTFORK);
  setpgid(pid, pid);  // also done by the child; whichever runs first wins the race
  spare->pid = pid;
  spare->pidfd.Reset(PidfdOpen(pid));
  state.spare = std::move(spare);
  return {};
}

// Kills and reaps the spare (it never got a job).
void DiscardSpare(ServerState& state) {
  if (state.spare == nullptr) return;
  KillGroup(state.spare->pid);
  while (waitpid(state.spare->pid, nullptr, __WALL) < 0 && errno == EINTR) {
  }
  state.spare.reset();
}

// Sends the job to a spare: `inline_job` (kind 'I' + JobHeader + payload) or, when empty,
// kind 'M' with `job_fd` (a memfd holding them); the stdin memfd and the peer socket (or
// none) come first, in that order (ReceiveJob).
bool SendJob(int sock, const std::string& inline_job, int job_fd, int stdin_fd, int peer_fd) {
  char kind = 'M';
  iovec iov{&kind, 1};
  if (!inline_job.empty()) iov = {const_cast<char*>(inline_job.data()), inline_job.size()};
  int fds[3];
  int count = 0;
  fds[count++] = stdin_fd;
  if (peer_fd >= 0) fds[count++] = peer_fd;
  if (inline_job.empty()) fds[count++] = job_fd;
  alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(count * sizeof(int));
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(count * sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), fds, count * sizeof(int));
  ssize_t sent;
  do {
    sent = sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  return sent == static_cast<ssize_t>(iov.iov_len);
}

std::string SetupFailure(const ViolationRecord& record) {
  return fmt::format(
      "sandbox setup failed in the child: {}",
      std::string(record.setup_error, strnlen(record.setup_error, sizeof(record.setup_error))));
}

// One request: fresh (empty) private dir, the job to the spare (forked now if none is
// ready), the next spare forked, supervise, reap, classify.
std::string RunOne(ServerState& state, ChildRequest& request, ChildOutcome* outcome) {
  const Limits limits = request.limits;
  UniqueFd peer_fd(request.peer_fd);  // owned here (ReceiveRequest)
  request.peer_fd = -1;
  const double prepare_start = MonotonicSeconds();
  // stdin is a memfd holding the whole input: finite, seekable, and nothing to pump.
  UniqueFd stdin_fd(memfd_create("egca-stdin", MFD_CLOEXEC));
  if (!stdin_fd.valid() ||
      (!request.stdin_data.empty() && (!WriteAll(stdin_fd.get(), request.stdin_data) ||
                                       lseek(stdin_fd.get(), 0, SEEK_SET) != 0))) {
    return fmt::format("stdin memfd: {}", std::strerror(errno));
  }
  // The job: its limits and payload, in the hand-over message or, when large, in a memfd
  // (either way a spare still isolating itself never blocks the server).
  JobHeader header{limits, request.payload.size()};
  std::string inline_job;
  UniqueFd job_fd;
  if (sizeof(header) + request.payload.size() <= kInlineJobBytes) {
    inline_job.reserve(1 + sizeof(header) + request.payload.size());
    inline_job.push_back('I');
    inline_job.append(reinterpret_cast<const char*>(&header), sizeof(header));
    inline_job.append(request.payload);
  } else {
    job_fd.Reset(memfd_create("egca-job", MFD_CLOEXEC));
    if (!job_fd.valid() || !WriteAll(job_fd.get(), &header, sizeof(header)) ||
        !WriteAll(job_fd.get(), request.payload.data(), request.payload.size())) {
      return fmt::format("job memfd: {}", std::strerror(errno));
    }
  }
  // The server's copies of the request go before any fork: a spare forked from here on
  // (the next job's) inherits nothing of this one.
  explicit_bzero(request.payload.data(), request.payload.size());
  explicit_bzero(request.stdin_data.data(), request.stdin_data.size());
  struct EraseInline {
    std::string& job;
    ~EraseInline() { explicit_bzero(job.data(), job.size()); }
  } erase_inline{inline_job};

  double fork_seconds = 0;
  double dispatched = 0;
  std::unique_ptr<Spare> child;
  for (int attempt = 0; child == nullptr; ++attempt) {
    const int slot = state.spare != nullptr ? state.spare->slot : 0;
    struct stat dir {};
    if (std::string error = PrepareWorkDir(state, slot, &dir); !error.empty()) return error;
    if (state.spare != nullptr &&
        (state.spare->dir_dev != dir.st_dev || state.spare->dir_ino != dir.st_ino)) {
      DiscardSpare(state);  // it entered a directory that is gone
    }
    if (state.spare == nullptr) {
      const double t = MonotonicSeconds();
      if (std::string error = ForkSpare(state, slot); !error.empty()) return error;
      fork_seconds += MonotonicSeconds() - t;
    }
    dispatched = MonotonicSeconds();
    if (SendJob(state.spare->job.get(), inline_job, job_fd.get(), stdin_fd.get(), peer_fd.get())) {
      child = std::move(state.spare);
      break;
    }
    // It ended before its job: its isolation failed (the error, as without a spare), or
    // something killed it (one fresh spare).
    Spare& dead = *state.spare;
    int status = 0;
    while (waitpid(dead.pid, &status, __WALL) < 0 && errno == EINTR) {
    }
    const bool failed = dead.record->setup_failed != 0;
    const std::string error = failed ? SetupFailure(*dead.record) : std::string();
    state.spare.reset();
    if (failed) return error;
    if (attempt >= 1) return "the sandboxed child ended before its job";
  }
  explicit_bzero(inline_job.data(), inline_job.size());
  state.work_dir_empty = false;  // the job's child runs there now
  const pid_t pid = child->pid;
  outcome->pid = pid;
  job_fd.Reset();
  stdin_fd.Reset();
  peer_fd.Reset();  // the child's now: the server keeps no end of it
  const double start = dispatched;
  // The next job's spare, isolating itself while this job runs. Its uid is the other slot's.
  // A failure here only means the next job forks its own.
  ForkSpare(state, 1 - child->slot);
  const pid_t spare_pid = state.spare != nullptr ? state.spare->pid : 0;
  UniqueFd* read_end = child->read_end;
  UniqueFd& notify_server_end = child->notify_server_end;
  UniqueFd listener;
  UniqueFd pidfd = std::move(child->pidfd);
  ViolationRecord* const record_page = child->record;

  OutputCollector collector(limits);
  KillReason reason = KillReason::kNone;
  double deadline = start + limits.wall_seconds;
  double next_cpu_check = start + kCpuCheckInterval;
  bool open[4] = {false, true, true, true};
  int status = 0;
  rusage usage{};
  bool reaped = false;
  auto kill_for = [&](KillReason why) {
    if (reason == KillReason::kNone) reason = why;
    KillGroup(pid);
  };
  int violation_nr = -1;
  bool listener_used = false;  // the child reports violations through the listener
  double next_handover_check = start + kHandoverInterval;
  if (notify_server_end.valid()) {
    // A spare that finished its isolation handed its listener over already: taken now, the
    // server need not wake for it later.
    const int fd = ReceiveFd(notify_server_end.get());
    if (fd >= 0) {
      listener.Reset(fd);
      listener_used = true;
      notify_server_end.Reset();
    }
  }
  while (!reaped) {
    pollfd fds[7];
    int n = 0;
    int index_of[7] = {};
    for (int i = 1; i < 4; ++i) {
      if (!open[i]) continue;
      fds[n] = {read_end[i].get(), POLLIN, 0};
      index_of[n++] = i;
    }
    int pidfd_slot = -1;
    if (pidfd.valid()) {
      fds[n] = {pidfd.get(), POLLIN, 0};
      pidfd_slot = n++;
    }
    int listener_slot = -1;
    if (listener.valid()) {
      fds[n] = {listener.get(), POLLIN, 0};
      listener_slot = n++;
    }
    int sock_slot = n;
    fds[n++] = {kServerSocketFd, POLLRDHUP, 0};
    double now = MonotonicSeconds();
    double wake = reason == KillReason::kNone ? std::min(deadline, next_cpu_check) : now + 0.05;
    if (notify_server_end.valid()) wake = std::min(wake, next_handover_check);
    if (!pidfd.valid()) wake = std::min(wake, now + 0.002);
    int timeout_ms = static_cast<int>(std::ceil(std::min(std::max(0.0, wake - now), 60.0) * 1000));
    int ready = poll(fds, static_cast<nfds_t>(n), timeout_ms);
    if (ready < 0 && errno != EINTR) return fmt::format("poll: {}", std::strerror(errno));
    for (int s = 0; ready > 0 && s < n; ++s) {
      if (fds[s].revents == 0) continue;
      if (s == sock_slot) {
        // The caller is gone: nobody wants this outcome; leave nothing behind.
        KillGroup(pid);
        waitpid(pid, nullptr, 0);
        SweepOrphans(state.self);  // the spare too
        RemoveTree(state.server_dir);
        _exit(0);
      }
      if (s == pidfd_slot) continue;
      if (s == listener_slot) {
        if ((fds[s].revents & POLLIN) && state.notification != nullptr) {
          std::memset(state.notification, 0, sizeof(seccomp_notif));
          if (seccomp_notify_receive(listener.get(), state.notification) == 0 && violation_nr < 0) {
            // The calling thread waits for an answer it never gets: the whole group dies.
            violation_nr = state.notification->data.nr;
            kill_for(KillReason::kViolation);
          }
          // The call's arguments are the program's bytes: not left for the next spare.
          explicit_bzero(state.notification, sizeof(seccomp_notif));
        }
        if (fds[s].revents & (POLLHUP | POLLERR)) listener.Reset();  // no task left on it
        continue;
      }
      int i = index_of[s];
      if (!collector.Drain(read_end[i].get(), i, outcome)) open[i] = false;
    }
    if (collector.over_limit() && reason == KillReason::kNone) kill_for(KillReason::kOutput);
    now = MonotonicSeconds();
    if (notify_server_end.valid() && now >= next_handover_check) {
      // Picked up on a timer, not polled: most runs end before the first check and never
      // pay a wake-up for it; a violating thread waits at most kHandoverInterval.
      next_handover_check = now + kHandoverInterval;
      int fd = ReceiveFd(notify_server_end.get());
      if (fd >= 0) listener_used = true;
      if (fd >= 0 || errno != EAGAIN) {
        listener.Reset(fd);
        notify_server_end.Reset();
      }
    }
    if (reason == KillReason::kNone && now >= deadline) kill_for(KillReason::kWall);
    if (reason == KillReason::kNone && now >= next_cpu_check) {
      next_cpu_check = now + kCpuCheckInterval;
      if (ProcessCpuSeconds(pid) > limits.cpu_seconds) kill_for(KillReason::kCpu);
    }
    pid_t got = wait4(pid, &status, WNOHANG | __WALL, &usage);
    if (got == pid) reaped = true;
  }
  double end = MonotonicSeconds();
  if (notify_server_end.valid()) {
    // Take the listener out of the socket before closing it: closing a unix socket while
    // descriptors are in flight runs the kernel's unix garbage collector (~1 ms).
    listener.Reset(ReceiveFd(notify_server_end.get()));
    if (listener.valid()) listener_used = true;
  }
  // The child is gone; anything still in its group (only possible without seccomp) goes
  // too, then the pipes are drained of what was written before the end. With the filter a
  // child cannot make a process, so the sweep for orphans (a safety net) waits until the
  // reply is out (ServerMain).
  KillGroup(pid);
  if (!state.caps.seccomp) SweepOrphans(state.self, spare_pid);
  for (int i = 1; i < 4; ++i) {
    // Everything still buffered in the pipe (at most its capacity: the writers are gone).
    if (open[i]) collector.Drain(read_end[i].get(), i, outcome, /*max_reads=*/1 << 20);
  }

  outcome->wall_seconds = end - start;
  // The job's faults: those the spare took before its job (fork, isolation, prefault) were
  // off the caller's critical path. The spare's count is in its shared page, which the
  // program can overwrite: clamped, and diagnostic only.
  const auto faults = static_cast<uint64_t>(usage.ru_minflt);
  const auto before_job = static_cast<uint64_t>(std::max<int64_t>(record_page->ready_minflt, 0));
  outcome->minor_faults = faults - std::min(faults, before_job);
  FillPhases(*record_page, prepare_start, fork_seconds, start, end, MonotonicSeconds(),
             &outcome->phases);
  outcome->cpu_seconds =
      static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
      static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  outcome->max_rss_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
  const ViolationRecord& record = *record_page;
  // The isolation marker (see ChildMainOuter) is the sandbox's, not the payload's.
  const bool isolated = !outcome->result.empty() && outcome->result[0] == kIsolatedMarker;
  if (isolated) outcome->result.erase(0, 1);
  if (WIFEXITED(status)) {
    outcome->termination = Termination::kExited;
    outcome->exit_code = WEXITSTATUS(status);
    // Only a child that never reached the program can report a setup failure: the program
    // can write the shared page and exit with any code, but not unwrite the marker.
    if (!isolated && outcome->exit_code == kIsolationFailedExit && record.setup_failed) {
      return SetupFailure(record);
    }
  } else if (WIFSIGNALED(status)) {
    outcome->termination = Termination::kSignaled;
    outcome->signal = WTERMSIG(status);
  }
  double cpu_rlimit = std::max(1.0, std::ceil(limits.cpu_seconds));
  bool signaled = WIFSIGNALED(status);
  if (reason == KillReason::kWall) {
    outcome->termination = Termination::kWallTimeout;
  } else if (reason == KillReason::kOutput) {
    outcome->termination = Termination::kOutputLimit;
  } else if (reason == KillReason::kCpu) {
    outcome->termination = Termination::kCpuTimeout;
  } else if (reason == KillReason::kViolation) {
    outcome->termination = Termination::kViolation;
    outcome->violation = SyscallName(violation_nr);
    outcome->signal = SIGSYS;
  } else if (!listener_used && record.magic == kViolationMagic) {
    // The SIGSYS reporter's page. With a listener the kernel told the server itself, and
    // the page holds only what the program may have written there.
    outcome->termination = Termination::kViolation;
    outcome->violation = SyscallName(record.syscall_nr);
    outcome->signal = SIGSYS;
  } else if (signaled && outcome->signal == SIGSYS) {
    // Killed by the kernel for a trapped call while SIGSYS was blocked, or a foreign ABI.
    outcome->termination = Termination::kViolation;
    outcome->violation = "unknown";
  } else if (signaled && (outcome->signal == SIGXCPU ||
                          (outcome->signal == SIGKILL && outcome->cpu_seconds >= cpu_rlimit))) {
    outcome->termination = Termination::kCpuTimeout;
  }
  return {};
}

// The server is a fork of the caller: its command line and environment strings (say,
// egca-run --expect 3 or a --tests path) are the caller's, and every child would read them
// in /proc/self/cmdline and /proc/self/environ. They are zeroed in place (the kernel reads
// the same memory for both files).
void EraseArgumentsAndEnvironment() {
  FILE* f = std::fopen("/proc/self/stat", "re");
  if (f == nullptr) return;
  char buf[4096];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // Fields after the command name (which may hold spaces): from the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return;
  // ") S 1234 ...": skip the state letter; field[0] is then field 4 of proc(5).
  p += 2;
  while (*p != '\0' && *p != ' ') ++p;
  while (*p == ' ') ++p;
  unsigned long long field[64] = {};
  int count = 0;
  while (*p != '\0' && count < 64) {
    char* end = nullptr;
    field[count++] = std::strtoull(p, &end, 10);
    if (end == p) break;
    p = end;
    while (*p == ' ') ++p;
  }
  // Fields 48-51 of proc(5): arg_start, arg_end, env_start, env_end.
  if (count < 48) return;
  for (int i : {44, 46}) {
    const unsigned long long start = field[i], end = field[i + 1];
    if (start != 0 && end > start && end - start < (64ull << 20)) {
      explicit_bzero(reinterpret_cast<void*>(start), end - start);
    }
  }
}

// What a child sent, gone from the server's memory before the outcome is freed.
void WipeOutcome(ChildOutcome* outcome) {
  WipeString(&outcome->stdout_data);
  WipeString(&outcome->stderr_data);
  WipeString(&outcome->result);
  WipeString(&outcome->violation);
}

void ResetSignals() {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    signal(sig, SIG_DFL);
  }
  // The server writes to its caller with MSG_NOSIGNAL; this covers everything else.
  signal(SIGPIPE, SIG_IGN);
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
}

}  // namespace

void ServerMain(const ForkServerOptions& options, int sock) {
  // Every child is a fork of this process, so its heap is what each fork copies page tables
  // for and each exit tears down. glibc's malloc raises its mmap threshold after a large
  // block is freed (up to 32 MB) and then keeps such blocks in the heap: one large result
  // passing through the server (a trace of several MB) would leave the heap that large and
  // make every later run slower. Fixed thresholds return large blocks to the system.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  mallopt(M_TRIM_THRESHOLD, 256 * 1024);
  // Own session: no controlling terminal for the server or its children (no /dev/tty,
  // no terminal signals from the caller's shell).
  setsid();
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  ResetSignals();
  if (sock != kServerSocketFd) {
    if (dup2(sock, kServerSocketFd) != kServerSocketFd) _exit(1);
  }
  fcntl(kServerSocketFd, F_SETFD, FD_CLOEXEC);
  CloseFdsFrom(kServerSocketFd + 1);

  EraseArgumentsAndEnvironment();
  ServerState state;
  state.options = &options;
  state.self = getpid();
  state.caps = SetUpServerIsolation(options);
  // Not dumpable: an unprivileged child of the same uid cannot open /proc/<server>/mem
  // or ptrace the server. Only now: a non-dumpable process cannot write its own
  // /proc/self/uid_map, which entering a user namespace needs.
  prctl(PR_SET_DUMPABLE, 0);
  state.server_dir = fmt::format("{}/srv-{}", options.scratch_root, state.self);
  state.work_dir = state.server_dir + "/work";
  ReadyMessage ready;
  ready.capabilities = state.caps;
  if (!MakeDirs(state.server_dir, 0711)) {
    ready.error = fmt::format(
        "cannot create {}: {} (ForkServerOptions.scratch_root must be writable by this user; "
        "on a shared machine give each user its own)",
        state.server_dir, std::strerror(errno));
  }
  if (state.caps.seccomp && ready.error.empty()) {
    ready.error = BuildSeccompFilter(ViolationAction::kTrap, &state.seccomp_program);
    // Without the notify API (libseccomp < 2.5 / kernel < 5.0) children use SIGSYS only.
    seccomp_notif_resp* unused_response = nullptr;
    if (ready.error.empty() && options.seccomp_notify &&
        BuildSeccompFilter(ViolationAction::kNotify, &state.notify_program).empty() &&
        seccomp_notify_alloc(&state.notification, &unused_response) == 0) {
      seccomp_notify_free(nullptr, unused_response);
    } else {
      state.notify_program.clear();
    }
  }
  ApplyServerEnvironment(options, state.work_dir);
  if (chdir("/") != 0) ready.error = "chdir /";
  if (ready.error.empty()) {
    try {
      if (options.warm_up) options.warm_up();
      ready.ok = true;
    } catch (const std::exception& e) {
      ready.error = fmt::format("warm-up threw: {}", e.what());
    } catch (...) {
      ready.error = "warm-up threw a non-standard exception";
    }
  }
  std::fflush(nullptr);
  if (!WriteAll(kServerSocketFd, EncodeReady(ready)) || !ready.ok) {
    RemoveTree(state.server_dir);
    _exit(1);
  }
  for (;;) {
    ChildRequest request;
    if (!ReceiveRequest(kServerSocketFd, &request)) break;
    ChildOutcome outcome;
    std::string error = RunOne(state, request, &outcome);
    // Later children are forks of this process: this run's request must not stay in
    // freed memory for them to read (RunOne erased it before its first fork already), nor
    // what its child sent (the outcome and the frame that carries it).
    explicit_bzero(request.payload.data(), request.payload.size());
    explicit_bzero(request.stdin_data.data(), request.stdin_data.size());
    std::string frame = EncodeOutcome(outcome, error);
    const bool sent = WriteAll(kServerSocketFd, frame);
    WipeString(&frame);
    WipeOutcome(&outcome);
    WipeString(&error);
    if (!sent) break;
    // What the child left in its private directory goes after the reply, off the caller's
    // wait; unless it is then found empty, the next dispatch empties it again.
    if (state.caps.seccomp) SweepOrphans(state.self, state.spare != nullptr ? state.spare->pid : 0);
    EmptyDirectoryAt(state.work_dir);
    state.work_dir_empty = DirectoryIsEmpty(state.work_dir);
  }
  SweepOrphans(state.self);
  RemoveTree(state.server_dir);
  _exit(0);
}

}  // namespace egca::sandbox::internal

namespace egca::sandbox {

int ServeMain(int argc, char** argv, ServeHooks hooks) {
  using namespace internal;
  struct stat st {};
  if (argc != 2 || std::strcmp(argv[1], kServeFlag) != 0 || fstat(kServerChannelFd, &st) != 0 ||
      !S_ISSOCK(st.st_mode)) {
    std::fprintf(stderr,
                 "%s: egca's fork server program; egca starts it (ForkServerOptions::"
                 "server_binary), it is not a command\n",
                 argc > 0 ? argv[0] : "egca fork server");
    return 2;
  }
  // Nothing but the channel (and 0-2 on /dev/null) may stay open, whoever started us.
  CloseFdsFrom(kServerChannelFd + 1);
  static ForkServerOptions options;  // ServerMain keeps a reference for its lifetime
  std::string error;
  if (!ReceiveOptions(kServerChannelFd, &options, &error) || !hooks.child_main) {
    ReadyMessage ready;
    ready.error = hooks.child_main ? error : "the server program has no child_main";
    WriteAll(kServerChannelFd, EncodeReady(ready));
    return 1;
  }
  options.child_main = std::move(hooks.child_main);
  if (hooks.warm_up) {
    options.warm_up = [warm_up = std::move(hooks.warm_up)] { warm_up(options.server_config); };
  }
  ServerMain(options, kServerChannelFd);
}

}  // namespace egca::sandbox
