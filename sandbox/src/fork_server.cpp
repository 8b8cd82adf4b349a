#include "egca/sandbox/fork_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "isolation.h"
#include "posix_util.h"
#include "server.h"
#include "wire.h"

namespace egca::sandbox {

using internal::UniqueFd;

const char* TerminationName(Termination t) {
  switch (t) {
    case Termination::kExited:
      return "exited";
    case Termination::kSignaled:
      return "signaled";
    case Termination::kWallTimeout:
      return "wall_timeout";
    case Termination::kCpuTimeout:
      return "cpu_timeout";
    case Termination::kOutputLimit:
      return "output_limit";
    case Termination::kViolation:
      return "violation";
  }
  return "unknown";
}

std::string Capabilities::ToString() const {
  return fmt::format(
      "seccomp={} landlock_abi={} network_namespace={} mount_namespace={} pid_namespace={} "
      "uid_drop={} user_namespace={} filesystem_view={}",
      seccomp, landlock_abi, network_namespace, mount_namespace, pid_namespace, uid_drop,
      user_namespace, filesystem_view);
}

std::vector<std::string> DefaultReadablePaths() {
  return {"/usr/lib",       "/usr/lib64",    "/lib",       "/lib64",
          "/usr/share/zoneinfo", "/etc/ld.so.cache", "/etc/localtime", "/etc/ssl",
          "/etc/passwd",    "/etc/group",    "/etc/nsswitch.conf"};
}

namespace {

// Forks from this process are serialized: a server forked while another thread is
// between socketpair() and fork() would inherit that server's socket end; every server
// closes inherited descriptors at once, but serializing keeps the window closed too.
std::mutex g_fork_mutex;

// How long the caller waits for an outcome beyond the wall limit before it declares the
// server hung (it enforces the wall limit itself; this only catches a broken server).
constexpr double kServerGraceSeconds = 30.0;

Status ValidateLimits(const Limits& l) {
  auto bad = [](const char* field, double value) {
    return InvalidArgument(
        fmt::format("Limits.{} must be positive and finite, got {}", field, value));
  };
  if (!(l.wall_seconds > 0) || !std::isfinite(l.wall_seconds)) {
    return bad("wall_seconds", l.wall_seconds);
  }
  if (!(l.cpu_seconds > 0) || !std::isfinite(l.cpu_seconds)) {
    return bad("cpu_seconds", l.cpu_seconds);
  }
  if (l.memory_bytes == 0) return bad("memory_bytes", 0);
  if (l.max_threads < 1) return bad("max_threads", l.max_threads);
  if (l.max_open_files < 1) return bad("max_open_files", l.max_open_files);
  return Status::Ok();
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return "ended";
}

}  // namespace

class ForkServer::Impl {
 public:
  explicit Impl(ForkServerOptions options) : options_(std::move(options)) {}
  ~Impl() { Stop(); }

  // Starts a server (forked, or the server program) and waits for its ready message.
  Status Spawn() {
    if (!options_.server_binary.empty()) return SpawnProgram();
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      return Internal(fmt::format("fork server: socketpair: {}", std::strerror(errno)));
    }
    UniqueFd mine(sv[0]), theirs(sv[1]);
    pid_t pid;
    {
      std::lock_guard<std::mutex> lock(g_fork_mutex);
      std::fflush(nullptr);
      pid = fork();
      if (pid == 0) {
        mine.Reset();
        internal::ServerMain(options_, theirs.get());
      }
    }
    if (pid < 0) return Internal(fmt::format("fork server: fork: {}", std::strerror(errno)));
    theirs.Reset();
    SetPid(pid);
    sock_ = std::move(mine);
    return AwaitReady();
  }

  // Exec mode: posix_spawn (a vfork: no copy of the caller's page tables, whatever its
  // size) of the server program with nothing of the caller but the channel, then the
  // options over it.
  Status SpawnProgram() {
    const std::string& path = options_.server_binary;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      return Internal(fmt::format("fork server: socketpair: {}", std::strerror(errno)));
    }
    UniqueFd mine(sv[0]), theirs(sv[1]);
    if (theirs.get() <= internal::kServerChannelFd) {
      // dup2 onto itself would keep FD_CLOEXEC: move it out of the way first.
      UniqueFd moved(fcntl(theirs.get(), F_DUPFD_CLOEXEC, 10));
      if (!moved.valid()) return Internal(fmt::format("fork server: fcntl: {}", std::strerror(errno)));
      theirs = std::move(moved);
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, theirs.get(), internal::kServerChannelFd);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    // Descriptors the caller left inheritable; the server also closes them on entry.
    posix_spawn_file_actions_addclosefrom_np(&actions, internal::kServerChannelFd + 1);
#endif
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETSID);
    std::string flag(internal::kServeFlag);
    char* argv[] = {const_cast<char*>(path.c_str()), flag.data(), nullptr};
    char* envp[] = {nullptr};
    pid_t pid = 0;
    int rc;
    {
      std::lock_guard<std::mutex> lock(g_fork_mutex);
      rc = posix_spawn(&pid, path.c_str(), &actions, &attr, argv, envp);
    }
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      return Internal(fmt::format("fork server: cannot start {}: {}", path, std::strerror(rc)));
    }
    theirs.Reset();
    SetPid(pid);
    sock_ = std::move(mine);
    if (!internal::WriteAll(sock_.get(), internal::EncodeOptions(options_))) {
      int status = Reap(/*force=*/true);
      return Internal(fmt::format("fork server {} died during start-up, before reading its options ({})", path,
                                  DescribeWaitStatus(status)));
    }
    return AwaitReady();
  }

  Status AwaitReady() {
    internal::ReadyMessage ready;
    if (!internal::ReceiveReady(sock_.get(), &ready)) {
      int status = Reap(/*force=*/true);
      return Internal(
          fmt::format("fork server died during start-up ({})", DescribeWaitStatus(status)));
    }
    if (!ready.ok) {
      Reap(/*force=*/true);
      return Internal(fmt::format("fork server warm-up failed: {}", ready.error));
    }
    capabilities_ = ready.capabilities;
    return Status::Ok();
  }

  StatusOr<ChildOutcome> Run(const ChildRequest& request) {
    UniqueFd peer(request.peer_fd);  // ours to close: once sent, or on any error before
    EGCA_RETURN_IF_ERROR(ValidateLimits(request.limits));
    std::lock_guard<std::mutex> lock(mu_);
    if (pid_ == 0) {
      Status started = Spawn();
      if (!started.ok()) return started.WithContext("restarting the fork server");
    }
    if (!internal::SendRequest(sock_.get(), internal::EncodeRequest(request), peer.get())) {
      return ServerLost("sending the request");
    }
    // The server holds its own reference now; keeping ours would hide the child's end of
    // the conversation closing from the other child.
    peer.Reset();
    // The server answers within the wall limit plus collection time; a server that does
    // not is broken and is replaced.
    double deadline =
        internal::MonotonicSeconds() + request.limits.wall_seconds + kServerGraceSeconds;
    pollfd pfd{sock_.get(), POLLIN, 0};
    int ready;
    do {
      double left = std::min(deadline - internal::MonotonicSeconds(), 3600.0);
      ready = left <= 0 ? 0 : poll(&pfd, 1, static_cast<int>(std::ceil(left * 1000)));
    } while ((ready < 0 && errno == EINTR) ||
             (ready == 0 && internal::MonotonicSeconds() < deadline));
    if (ready <= 0) return ServerLost("waiting for the outcome (server hung)");
    ChildOutcome outcome;
    std::string error;
    if (!internal::ReceiveOutcome(sock_.get(), &outcome, &error)) {
      return ServerLost("reading the outcome");
    }
    if (!error.empty()) return Internal(fmt::format("fork server: {}", error));
    return outcome;
  }

  Capabilities capabilities() const {
    std::lock_guard<std::mutex> lock(mu_);
    return capabilities_;
  }

  // Without mu_ (a Run() may hold it): the pid stays ours until Reap() waits for it, and
  // Reap() clears abort_pid_ under abort_mu_ first, so no other process can be signalled.
  void Abort() {
    std::lock_guard<std::mutex> lock(abort_mu_);
    if (abort_pid_ > 0) kill(abort_pid_, SIGKILL);
  }
  int server_pid() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pid_;
  }

 private:
  Status ServerLost(const char* during) {
    int status = Reap(/*force=*/true);
    return Unavailable(fmt::format("fork server {} while {}; it is restarted on the next Run()",
                                   DescribeWaitStatus(status), during));
  }

  // Ends the server: closing the socket makes it clean up and exit; `force` kills it at
  // once. Its children die with it (PR_SET_PDEATHSIG). Returns its wait status.
  int Reap(bool force) {
    if (pid_ == 0) return 0;
    SetPid(pid_, /*abortable=*/false);
    if (force) kill(pid_, SIGKILL);
    sock_.Reset();
    int status = 0;
    if (!force) {
      // Give it a moment to remove its scratch directory.
      UniqueFd pidfd(internal::PidfdOpen(pid_));
      pollfd pfd{pidfd.get(), POLLIN, 0};
      if (!pidfd.valid() || poll(&pfd, 1, 2000) <= 0) kill(pid_, SIGKILL);
    }
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    if (force) {
      // A killed server could not remove its directory. (With a mount namespace it lived
      // in the server's private tmpfs and is gone already.)
      internal::RemoveTree(fmt::format("{}/srv-{}", options_.scratch_root, pid_));
    }
    pid_ = 0;
    return status;
  }

  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    Reap(/*force=*/false);
  }

  void SetPid(pid_t pid, bool abortable = true) {
    pid_ = pid;
    std::lock_guard<std::mutex> lock(abort_mu_);
    abort_pid_ = abortable ? pid : 0;
  }

  ForkServerOptions options_;
  std::mutex abort_mu_;  // guards abort_pid_
  pid_t abort_pid_ = 0;  // the running server, for Abort(); 0 once Reap() started
  mutable std::mutex mu_;  // serializes Run(); guards the fields below
  pid_t pid_ = 0;
  UniqueFd sock_;
  Capabilities capabilities_;
};

ForkServer::ForkServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ForkServer::~ForkServer() = default;

StatusOr<std::unique_ptr<ForkServer>> ForkServer::Start(ForkServerOptions options) {
  if (options.server_binary.empty()) {
    if (!options.child_main) return InvalidArgument("ForkServerOptions.child_main is required");
  } else {
    if (options.server_binary[0] != '/') {
      return InvalidArgument(fmt::format("ForkServerOptions.server_binary must be absolute: '{}'",
                                         options.server_binary));
    }
    if (options.child_main || options.warm_up) {
      return InvalidArgument(
          "ForkServerOptions: warm_up and child_main cannot cross exec; with server_binary "
          "they live in the server program (ServeHooks)");
    }
    if (access(options.server_binary.c_str(), X_OK) != 0) {
      return NotFound(fmt::format("fork server program {}: {}", options.server_binary,
                                  std::strerror(errno)));
    }
  }
  if (options.scratch_root.empty() || options.scratch_root[0] != '/') {
    return InvalidArgument(
        fmt::format("ForkServerOptions.scratch_root must be absolute: '{}'", options.scratch_root));
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  EGCA_RETURN_IF_ERROR(impl->Spawn());
  return std::unique_ptr<ForkServer>(new ForkServer(std::move(impl)));
}

StatusOr<ChildOutcome> ForkServer::Run(const ChildRequest& request) { return impl_->Run(request); }
Capabilities ForkServer::capabilities() const { return impl_->capabilities(); }
int ForkServer::server_pid() const { return impl_->server_pid(); }
void ForkServer::Abort() { impl_->Abort(); }

Capabilities ProbeCapabilities() {
  // Probed by doing what a server does, in a throwaway process.
  static std::once_flag once;
  static Capabilities probed;
  std::call_once(once, [] {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return;
    UniqueFd read_end(p[0]), write_end(p[1]);
    pid_t pid;
    {
      std::lock_guard<std::mutex> lock(g_fork_mutex);
      pid = fork();
      if (pid == 0) {
        ForkServerOptions options;
        options.scratch_tmpfs_bytes = 1 << 20;
        internal::ReadyMessage ready;
        ready.ok = true;
        ready.capabilities = internal::SetUpServerIsolation(options);
        internal::WriteAll(write_end.get(), internal::EncodeReady(ready));
        _exit(0);
      }
    }
    write_end.Reset();
    if (pid < 0) return;
    internal::ReadyMessage ready;
    if (internal::ReceiveReady(read_end.get(), &ready)) probed = ready.capabilities;
    waitpid(pid, nullptr, 0);
  });
  return probed;
}

}  // namespace egca::sandbox
