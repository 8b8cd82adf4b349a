// Fork server behaviour with C++ child_main functions (no Python): outcomes, limits,
// violations, isolation of the filesystem and of the parent, and leak checks.
#include "egca/sandbox/fork_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "test_child.h"

namespace egca::sandbox {
namespace {

using testing::TestChild;
using testing::WriteAllFd;

Limits FastLimits() {
  Limits l;
  l.wall_seconds = 5;
  l.cpu_seconds = 5;
  l.memory_bytes = 1ull << 30;
  return l;
}

ChildRequest Req(std::string payload, Limits limits = FastLimits()) {
  ChildRequest r;
  r.payload = std::move(payload);
  r.limits = limits;
  return r;
}

std::string ScratchRoot() { return fmt::format("/tmp/egca-sandbox-test-{}", getpid()); }

// With EGCA_SANDBOX_TEST_SERVER set (the same tests registered again as "exec:..."), the
// servers these tests start are that program (exec_test_server.cpp, the same TestChild).
std::unique_ptr<ForkServer> StartServer(bool seccomp = true, bool namespaces = true,
                                        bool landlock = true) {
  ForkServerOptions options;
  if (const char* program = std::getenv("EGCA_SANDBOX_TEST_SERVER"); program != nullptr) {
    options.server_binary = program;
  } else {
    options.child_main = TestChild;
  }
  options.install_seccomp = seccomp;
  options.use_namespaces = namespaces;
  options.use_landlock = landlock;
  options.scratch_root = ScratchRoot();
  auto server = ForkServer::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

int CountOpenFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

bool ProcessAlive(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto close_paren = line.rfind(')');
  return close_paren != std::string::npos && line.size() > close_paren + 2 &&
         line[close_paren + 2] != 'Z';
}

// Pids of processes whose parent, process group or session is `pid`.
std::vector<pid_t> ProcessesRelatedTo(pid_t pid) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    pid_t p = std::atoi(e->d_name);
    if (p <= 0 || p == pid) continue;
    std::ifstream stat(fmt::format("/proc/{}/stat", p));
    std::string line;
    if (!std::getline(stat, line)) continue;
    auto close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0, pgrp = 0, session = 0;
    if (std::sscanf(line.c_str() + close_paren + 2, "%c %d %d %d", &state, &ppid, &pgrp,
                    &session) != 4) {
      continue;
    }
    if (ppid == pid || pgrp == pid || session == pid) out.push_back(p);
  }
  closedir(d);
  return out;
}

// What is left below a server after its runs, apart from its spare: the child it forked
// ahead for the next job (a direct child in its own process group, not `last_child`, the
// last job's, and with no process of its own). Empty: nothing stray.
std::vector<pid_t> StrayBelow(pid_t server, pid_t last_child) {
  std::vector<pid_t> related = ProcessesRelatedTo(server);
  std::vector<pid_t> stray;
  bool spare_seen = false;
  for (pid_t p : related) {
    std::ifstream stat(fmt::format("/proc/{}/stat", p));
    std::string line;
    std::getline(stat, line);
    auto close_paren = line.rfind(')');
    int ppid = 0, pgrp = 0;
    char state = 0;
    const bool parsed =
        close_paren != std::string::npos &&
        std::sscanf(line.c_str() + close_paren + 2, "%c %d %d", &state, &ppid, &pgrp) == 3;
    if (!spare_seen && parsed && ppid == server && pgrp == p && p != last_child &&
        ProcessesRelatedTo(p).empty()) {
      spare_seen = true;
      continue;
    }
    stray.push_back(p);
  }
  return stray;
}

// Removes the tests' scratch root once every server is gone.
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(ScratchRoot(), ignored);
  }
};
const auto* const kScratchCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

class SandboxForkServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = StartServer().release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static ChildOutcome MustRun(const ChildRequest& request) {
    auto outcome = server_->Run(request);
    EXPECT_TRUE(outcome.ok()) << outcome.status().ToString();
    return outcome.ok() ? std::move(outcome).value() : ChildOutcome{};
  }
  static ForkServer* server_;
};
ForkServer* SandboxForkServerTest::server_ = nullptr;

TEST_F(SandboxForkServerTest, NormalExitWithResultAndOutput) {
  ChildOutcome o = MustRun(Req("hello"));
  EXPECT_EQ(o.termination, Termination::kExited);
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.result, "result bytes");
  EXPECT_FALSE(o.result_truncated);
  EXPECT_EQ(o.stdout_data, "to stdout");
  EXPECT_EQ(o.stderr_data, "to stderr");
  EXPECT_GT(o.wall_seconds, 0);
  EXPECT_LE(o.wall_seconds, 5);  // within the wall limit (how far within depends on the machine)
  EXPECT_GT(o.max_rss_bytes, 0u);
  EXPECT_GT(o.pid, 0);

  ChildOutcome code = MustRun(Req("exit:42"));
  EXPECT_EQ(code.termination, Termination::kExited);
  EXPECT_EQ(code.exit_code, 42);
}

TEST_F(SandboxForkServerTest, StdinIsTheRequestThenEof) {
  ChildRequest r = Req("echo_stdin");
  r.stdin_data = std::string(300000, 'i') + "end";
  ChildOutcome o = MustRun(r);
  EXPECT_EQ(o.termination, Termination::kExited);
  EXPECT_EQ(o.result, r.stdin_data);
}

TEST_F(SandboxForkServerTest, LargeResultDrainedWithStdout) {
  Limits l = FastLimits();
  l.output_bytes = 64ull << 20;
  ChildOutcome o = MustRun(Req("big:10485760", l));
  EXPECT_EQ(o.termination, Termination::kExited);
  EXPECT_EQ(o.result.size(), 10485760u);
  EXPECT_FALSE(o.result_truncated);
  EXPECT_EQ(o.stdout_data.size(), 160u * 16 * 1024);
}

TEST_F(SandboxForkServerTest, ResultOverLimitIsCutAndFlagged) {
  Limits l = FastLimits();
  l.result_bytes = 1000;
  l.output_bytes = 64ull << 20;
  ChildOutcome o = MustRun(Req("big:1048576", l));
  EXPECT_EQ(o.termination, Termination::kExited);
  EXPECT_EQ(o.result.size(), 1000u);
  EXPECT_TRUE(o.result_truncated);
}

TEST_F(SandboxForkServerTest, WallTimeoutSleeping) {
  Limits l = FastLimits();
  l.wall_seconds = 0.3;
  ChildOutcome o = MustRun(Req("sleep", l));
  EXPECT_EQ(o.termination, Termination::kWallTimeout);
  EXPECT_GE(o.wall_seconds, 0.3);
  // The child sleeps forever: any end is the server's kill. The bound only catches a
  // server that waits for something else (no machine takes 20 s to deliver a kill).
  EXPECT_LT(o.wall_seconds, 20);
  EXPECT_LT(o.cpu_seconds, 0.2);
}

TEST_F(SandboxForkServerTest, CpuLimitBusyLoop) {
  Limits l = FastLimits();
  l.cpu_seconds = 0.4;  // below RLIMIT_CPU's 1 s granularity: the server's accounting
  l.wall_seconds = 5;
  ChildOutcome o = MustRun(Req("busy", l));
  EXPECT_EQ(o.termination, Termination::kCpuTimeout);
  EXPECT_GE(o.cpu_seconds, 0.4);
  EXPECT_LT(o.cpu_seconds, 1.0);  // the server's accounting, not RLIMIT_CPU's whole second
}

TEST_F(SandboxForkServerTest, WallTimeoutBusyLoopIgnoringSignals) {
  Limits l = FastLimits();
  l.wall_seconds = 0.3;
  ChildOutcome o = MustRun(Req("busy_ignoring_signals", l));
  EXPECT_EQ(o.termination, Termination::kWallTimeout);
  EXPECT_LT(o.wall_seconds, 20);  // as WallTimeoutSleeping: a kill, not a wait
}

TEST_F(SandboxForkServerTest, MemoryLimitMakesMallocFail) {
  Limits l = FastLimits();
  l.memory_bytes = 256ull << 20;
  // The loop touches every page it gets (~65,000 faults to the limit): seconds of wall time
  // under load or where faults are slow (~15 us on nested VMs), and it ends at the memory
  // limit however long that takes, so the time limits are far away.
  l.wall_seconds = 120;
  l.cpu_seconds = 60;
  ChildOutcome o = MustRun(Req("malloc_loop", l));
  EXPECT_EQ(o.termination, Termination::kExited);
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_EQ(o.result.rfind("ENOMEM after", 0), 0u) << o.result;
  EXPECT_LE(o.max_rss_bytes, 256ull << 20);
}

TEST_F(SandboxForkServerTest, OutputFloodIsKilledQuickly) {
  Limits l = FastLimits();
  l.output_bytes = 1 << 20;
  ChildOutcome o = MustRun(Req("flood", l));
  EXPECT_EQ(o.termination, Termination::kOutputLimit);
  EXPECT_EQ(o.stdout_data.size(), 1u << 20);
  // Killed at the output limit, not at the 5 s wall limit (that would be kWallTimeout).
  EXPECT_LE(o.wall_seconds, 5.0);
}

TEST_F(SandboxForkServerTest, ForkIsAViolationNamingTheCall) {
  ChildOutcome o = MustRun(Req("fork"));
  EXPECT_EQ(o.termination, Termination::kViolation);
  EXPECT_EQ(o.violation, "clone");
  EXPECT_EQ(o.signal, SIGSYS);
  EXPECT_EQ(o.result, "");
}

TEST_F(SandboxForkServerTest, ViolationIsNamedEvenWithSignalsBlocked) {
  // The seccomp notification listener tells the server the call; a SIGSYS handler could
  // not run with SIGSYS blocked (the kernel would kill with SIGSYS, name unknown).
  ChildOutcome o = MustRun(Req("fork_sigsys_blocked"));
  EXPECT_EQ(o.termination, Termination::kViolation);
  EXPECT_EQ(o.violation, "clone");
}

TEST_F(SandboxForkServerTest, SocketIsAViolation) {
  ChildOutcome o = MustRun(Req("connect"));
  EXPECT_EQ(o.termination, Termination::kViolation);
  EXPECT_EQ(o.violation, "socket");
}

TEST_F(SandboxForkServerTest, ExecAndSetsidAreViolations) {
  ChildOutcome exec = MustRun(Req("execve"));
  EXPECT_EQ(exec.termination, Termination::kViolation);
  EXPECT_EQ(exec.violation, "execve");
  ChildOutcome setsid_outcome = MustRun(Req("setsid"));
  EXPECT_EQ(setsid_outcome.termination, Termination::kViolation);
  EXPECT_EQ(setsid_outcome.violation, "setsid");
}

TEST_F(SandboxForkServerTest, KillingTheParentOrTheGroupIsAViolationAndServerSurvives) {
  int server_pid = server_->server_pid();
  ChildOutcome o = MustRun(Req("kill_parent"));
  EXPECT_EQ(o.termination, Termination::kViolation);
  EXPECT_EQ(o.violation, "kill");
  ChildOutcome group = MustRun(Req("kill_group"));
  EXPECT_EQ(group.termination, Termination::kViolation);
  EXPECT_EQ(server_->server_pid(), server_pid);
  EXPECT_EQ(MustRun(Req("hello")).result, "result bytes");
}

TEST_F(SandboxForkServerTest, EveryForbiddenCallIsAViolationNamingIt) {
  // The whole policy, one call each (the compiled filter is a binary search over call
  // numbers: a misplaced range would let a call through or name the wrong one). Calls
  // whose harmless arguments are hard to guarantee (sethostname, acct, vhangup, ...) are
  // left to the review of the rule list.
  const std::vector<std::pair<const char*, long>> calls = {
      {"ptrace", SYS_ptrace},
      {"process_vm_readv", SYS_process_vm_readv},
      {"process_vm_writev", SYS_process_vm_writev},
      {"kcmp", SYS_kcmp},
      {"pidfd_open", SYS_pidfd_open},
      {"pidfd_getfd", SYS_pidfd_getfd},
      {"pidfd_send_signal", SYS_pidfd_send_signal},
      {"setpgid", SYS_setpgid},
      {"mount", SYS_mount},
      {"umount2", SYS_umount2},
      {"pivot_root", SYS_pivot_root},
      {"chroot", SYS_chroot},
      {"unshare", SYS_unshare},
      {"setns", SYS_setns},
      {"reboot", SYS_reboot},
      {"init_module", SYS_init_module},
      {"delete_module", SYS_delete_module},
      {"swapon", SYS_swapon},
      {"swapoff", SYS_swapoff},
      {"clock_settime", SYS_clock_settime},
      {"clock_adjtime", SYS_clock_adjtime},
      {"adjtimex", SYS_adjtimex},
      {"bpf", SYS_bpf},
      {"perf_event_open", SYS_perf_event_open},
      {"keyctl", SYS_keyctl},
      {"add_key", SYS_add_key},
      {"request_key", SYS_request_key},
      {"userfaultfd", SYS_userfaultfd},
      {"io_uring_setup", SYS_io_uring_setup},
      {"io_uring_enter", SYS_io_uring_enter},
      {"io_uring_register", SYS_io_uring_register},
      {"quotactl", SYS_quotactl},
      {"syslog", SYS_syslog},
      {"iopl", SYS_iopl},
      {"ioperm", SYS_ioperm},
      {"name_to_handle_at", SYS_name_to_handle_at},
      {"open_by_handle_at", SYS_open_by_handle_at},
      {"fanotify_init", SYS_fanotify_init},
      {"open_tree", SYS_open_tree},
      {"move_mount", SYS_move_mount},
      {"fsopen", SYS_fsopen},
      {"fspick", SYS_fspick},
      {"process_madvise", SYS_process_madvise},
      {"seccomp", SYS_seccomp},
      {"connect", SYS_connect},
      {"bind", SYS_bind},
      {"listen", SYS_listen},
      {"tkill", SYS_tkill},
      {"execveat", SYS_execveat},
  };
  for (const auto& [name, nr] : calls) {
    ChildOutcome o = MustRun(Req(fmt::format("syscall:{}", nr)));
    EXPECT_EQ(o.termination, Termination::kViolation) << name << ": " << o.result;
    EXPECT_EQ(o.violation, name);
  }
  // kill/tgkill/prlimit64 on pid 1 (signal 0 / no change, harmless if let through).
  ChildOutcome o = MustRun(Req(fmt::format("syscall:{}", SYS_kill)));
  EXPECT_EQ(o.termination, Termination::kViolation);  // kill(0, 0): the whole group
  EXPECT_EQ(o.violation, "kill");
}

TEST_F(SandboxForkServerTest, SignalsToItselfStayAllowed) {
  ChildOutcome o = MustRun(Req("signal_self"));
  EXPECT_EQ(o.termination, Termination::kExited) << o.violation;
  EXPECT_EQ(o.result, "0 0 0 1");
}

TEST_F(SandboxForkServerTest, PhasesAndPageFaultsAreReported) {
  constexpr size_t kBytes = 8u << 20;
  ChildOutcome o = MustRun(Req(fmt::format("touch_then_sleep:{}", kBytes)));
  ASSERT_EQ(o.termination, Termination::kExited);
  const ChildPhases& p = o.phases;
  EXPECT_GE(o.minor_faults, kBytes / 4096 / 2);  // at least half the pages (THP aside)
  // The job's child was forked ahead (a spare): fork is what the request waited for, 0
  // when the spare was ready.
  EXPECT_GE(p.fork, 0);
  EXPECT_GT(p.isolate, 0);
  EXPECT_GE(p.main, 0.030);  // the child slept 30 ms inside child_main
  EXPECT_GE(p.exit, 0);
  EXPECT_GE(p.prepare, 0);
  EXPECT_GE(p.collect, 0);
  // isolate + main + exit happen between the job's dispatch and the reap: the wall time.
  EXPECT_LE(p.isolate + p.main + p.exit, o.wall_seconds + 1e-6);
  EXPECT_GE(p.isolate + p.main + p.exit, 0.5 * o.wall_seconds);

  // Killed inside child_main: no main/exit phase.
  Limits l = FastLimits();
  l.wall_seconds = 0.2;
  ChildOutcome killed = MustRun(Req("sleep", l));
  EXPECT_EQ(killed.termination, Termination::kWallTimeout);
  EXPECT_GT(killed.phases.isolate, 0);
  EXPECT_EQ(killed.phases.main, 0);
  EXPECT_EQ(killed.phases.exit, 0);
}

TEST_F(SandboxForkServerTest, SegfaultIsASignal) {
  ChildOutcome o = MustRun(Req("segv"));
  EXPECT_EQ(o.termination, Termination::kSignaled);
  EXPECT_EQ(o.signal, SIGSEGV);
}

TEST_F(SandboxForkServerTest, WritesOutsideThePrivateDirDoNotEscape) {
  Capabilities caps = server_->capabilities();
  if (caps.landlock_abi == 0 && !caps.mount_namespace) {
    GTEST_SKIP() << "neither Landlock nor a mount namespace: " << caps.ToString();
  }
  const char* real_home = std::getenv("HOME");
  std::string tmp_target = fmt::format("/tmp/egca-escape-{}", getpid());
  for (const std::string& target :
       {tmp_target, std::string(real_home ? real_home : "/root") + "/egca-escape-test"}) {
    ChildOutcome o = MustRun(Req("write_files:" + target));
    EXPECT_EQ(o.termination, Termination::kExited);
    // Inside the private dir (cwd == HOME) writing works.
    EXPECT_NE(o.result.find("home=ok cwd=ok home_is_cwd=true"), std::string::npos) << o.result;
    struct stat st {};
    EXPECT_NE(stat(target.c_str(), &st), 0) << target << " appeared outside the sandbox";
  }
}

TEST_F(SandboxForkServerTest, CannotReadTheMemoryOrEnvironmentOfServerOrCaller) {
  Capabilities caps = server_->capabilities();
  if (!caps.uid_drop && caps.landlock_abi == 0) {
    GTEST_SKIP() << "same uid without Landlock: /proc of the caller is readable";
  }
  for (int pid : {server_->server_pid(), static_cast<int>(getpid())}) {
    for (const char* file : {"mem", "environ"}) {
      std::string path = fmt::format("/proc/{}/{}", pid, file);
      ChildOutcome o = MustRun(Req("read:" + path));
      EXPECT_EQ(o.termination, Termination::kExited);
      EXPECT_EQ(o.result.rfind("errno=", 0), 0u) << path << ": " << o.result;
    }
  }
}

TEST_F(SandboxForkServerTest, EveryRunStartsInAnEmptyPrivateDir) {
  ChildOutcome deep = MustRun(Req("deep:1000"));
  ASSERT_EQ(deep.termination, Termination::kExited);
  ASSERT_EQ(deep.exit_code, 0);
  ChildOutcome next = MustRun(Req("list_cwd"));
  EXPECT_EQ(next.result, "");
}

// A child's main thread is done (child_main returned) while a thread of its keeps writing
// files and output: the thread ends with the process, the reply is the main thread's, and
// the next job finds an empty private directory and nothing of that process left.
TEST_F(SandboxForkServerTest, NothingAChildDoesAfterItIsDoneReachesTheNextJob) {
  pid_t last = 0;
  for (int i = 0; i < 5; ++i) {
    ChildOutcome o = MustRun(Req("thread_writes_after_return"));
    EXPECT_EQ(o.termination, Termination::kExited) << TerminationName(o.termination);
    EXPECT_EQ(o.exit_code, 0);
    EXPECT_EQ(o.result, "returned");
    ChildOutcome next = MustRun(Req("list_cwd"));
    EXPECT_EQ(next.termination, Termination::kExited);
    EXPECT_EQ(next.result, "");
    EXPECT_FALSE(ProcessAlive(o.pid)) << o.pid;  // reaped
    last = next.pid;
  }
  EXPECT_TRUE(StrayBelow(server_->server_pid(), last).empty());
}

TEST_F(SandboxForkServerTest, FixedEnvironment) {
  ChildOutcome o = MustRun(Req("env"));
  EXPECT_NE(o.result.find("PYTHONHASHSEED=0\n"), std::string::npos);
  EXPECT_NE(o.result.find("LANG=C.UTF-8\n"), std::string::npos);
  EXPECT_NE(o.result.find("TZ=UTC\n"), std::string::npos);
  EXPECT_NE(o.result.find("PATH=/usr/bin:/bin\n"), std::string::npos);
  EXPECT_NE(o.result.find("HOME=" + ScratchRoot()), std::string::npos);
  EXPECT_EQ(o.result.find("GTEST"), std::string::npos);  // nothing of the caller's
}

TEST_F(SandboxForkServerTest, OnlyStdioAndResultFdAreOpen) {
  ChildOutcome o = MustRun(Req("fds"));
  std::set<std::string> fds;
  size_t pos = 0;
  while (pos < o.result.size()) {
    size_t space = o.result.find(' ', pos);
    fds.insert(o.result.substr(pos, space - pos));
    pos = space + 1;
  }
  EXPECT_EQ(fds, (std::set<std::string>{"0", "1", "2", "3"})) << o.result;
}

TEST_F(SandboxForkServerTest, ThreadLimitWhenUidDropped) {
  if (!server_->capabilities().uid_drop) GTEST_SKIP() << "RLIMIT_NPROC needs the uid drop";
  Limits l = FastLimits();
  l.max_threads = 8;
  ChildOutcome o = MustRun(Req("threads:100", l));
  EXPECT_EQ(o.termination, Termination::kExited);
  EXPECT_EQ(o.result, "7");  // the main thread counts
}

TEST_F(SandboxForkServerTest, LingeringThreadIsKilledWithTheProcess) {
  Limits l = FastLimits();
  l.wall_seconds = 0.3;
  ChildOutcome o = MustRun(Req("thread_exit_main", l));
  EXPECT_EQ(o.termination, Termination::kWallTimeout)
      << TerminationName(o.termination) << " signal " << o.signal << " " << o.violation;
  EXPECT_FALSE(ProcessAlive(o.pid));
}

// Each job's child is forked ahead, while the job before it runs (a spare: isolated, then
// waiting). The job's own limits reach it when the job does, and the running child and the
// spare never share a uid (RLIMIT_NPROC counts per uid: the spare would take a thread).
TEST(SandboxForkServer, TheNextJobsChildIsForkedAheadAndGetsTheJobsLimits) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto ids = [&](const Limits& l) {
    auto o = server->Run(Req("ids", l));
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    return o.ok() ? std::move(o).value() : ChildOutcome{};
  };
  auto field = [](const std::string& text, const std::string& name) {
    const size_t at = text.find(name + "=");
    return at == std::string::npos
               ? std::string("?")
               : text.substr(at + name.size() + 1, text.find(' ', at) - at - name.size() - 1);
  };
  Limits a = FastLimits();
  a.max_threads = 5;
  a.memory_bytes = 700ull << 20;
  a.cpu_seconds = 3;
  a.max_open_files = 60;
  ChildOutcome first = ids(a);
  EXPECT_GT(first.phases.fork, 0);  // a fresh server has no spare yet: forked for this job
  // Between jobs the server holds one child, the next job's, which has run nothing.
  std::vector<pid_t> below = ProcessesRelatedTo(server->server_pid());
  ASSERT_EQ(below.size(), 1u);
  const pid_t spare = below[0];
  EXPECT_NE(spare, first.pid);
  EXPECT_TRUE(StrayBelow(server->server_pid(), first.pid).empty());
  Limits b = FastLimits();
  b.max_threads = 9;
  b.memory_bytes = 900ull << 20;
  b.cpu_seconds = 4;
  b.max_open_files = 70;
  ChildOutcome second = ids(b);
  EXPECT_EQ(second.pid, spare);
  EXPECT_EQ(second.phases.fork, 0);
  EXPECT_EQ(field(second.result, "as"), std::to_string(900ull << 20)) << second.result;
  EXPECT_EQ(field(second.result, "cpu"), "4") << second.result;
  EXPECT_EQ(field(second.result, "nofile"), "70") << second.result;
  EXPECT_EQ(field(first.result, "as"), std::to_string(700ull << 20)) << first.result;
  EXPECT_EQ(field(first.result, "cpu"), "3") << first.result;
  ChildOutcome third = ids(a);
  EXPECT_EQ(field(third.result, "as"), std::to_string(700ull << 20)) << third.result;
  if (server->capabilities().uid_drop) {
    EXPECT_EQ(field(first.result, "nproc"), "5") << first.result;
    EXPECT_EQ(field(second.result, "nproc"), "9") << second.result;
    EXPECT_NE(field(first.result, "uid"), field(second.result, "uid"));
    EXPECT_EQ(field(first.result, "uid"), field(third.result, "uid"));
  }
}

// Whatever a child sends (stdout, stderr, its result channel) is gone from the memory of
// every later child (issue 38): the server wipes its copies (the outcome, the frame that
// carries it, the read buffer on its stack, every smaller block a growing buffer left
// behind) before it frees them, and the next job's child is forked ahead, from that
// state. Each scanning child searches its whole address space for the markers an earlier
// child made up and sent; the markers never pass through a request.
TEST(SandboxForkServer, NoLaterChildHoldsWhatAnEarlierChildSent) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const std::string prefix = std::string("egca") + "PLANT-";
  auto run = [&](const std::string& payload) {
    auto o = server->Run(Req(payload));
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    return o.ok() ? std::move(o).value() : ChildOutcome{};
  };
  // The control: before any marker exists, there is none to find.
  EXPECT_EQ(run("scan_all:" + prefix).result, "not found");
  std::vector<std::string> planted;
  for (const char* plant_how : {"plant:", "plant_small:", "plant:", "plant_small:"}) {
    SCOPED_TRACE(plant_how);
    ChildOutcome plant = run(plant_how + prefix);
    ASSERT_EQ(plant.termination, Termination::kExited) << plant.stderr_data.substr(0, 200);
    // The result's last three lines: the stdout, stderr and result markers.
    std::vector<std::string> lines;
    for (size_t at = 0; at <= plant.result.size();) {
      size_t end = plant.result.find('\n', at);
      if (end == std::string::npos) end = plant.result.size();
      lines.push_back(plant.result.substr(at, end - at));
      at = end + 1;
    }
    ASSERT_GE(lines.size(), 3u);
    for (size_t i = lines.size() - 3; i < lines.size(); ++i) {
      ASSERT_EQ(lines[i].size(), prefix.size() + 32) << lines[i];
      planted.push_back(lines[i]);
    }
    EXPECT_NE(plant.stdout_data.find(planted[planted.size() - 3]), std::string::npos);
    EXPECT_NE(plant.stderr_data.find(planted[planted.size() - 2]), std::string::npos);
    // The next children: the first was forked ahead before the marker existed, the later
    // ones after the server received it.
    for (int next = 0; next < 3; ++next) {
      ChildOutcome scan = run("scan_all:" + prefix);
      EXPECT_EQ(scan.termination, Termination::kExited);
      EXPECT_EQ(scan.phases.fork, 0) << "a spare forked ahead ran this job";
      for (const std::string& marker : planted) {
        EXPECT_EQ(scan.result.find(marker), std::string::npos)
            << "child " << next + 1 << " after planting found " << marker;
      }
      EXPECT_EQ(scan.result, "not found");
    }
  }
}

// The job reaches its child whole whatever its size: in the hand-over message up to
// 32 KiB, in a memfd above (with stdin and a peer socket alongside either way).
TEST_F(SandboxForkServerTest, JobsOfEverySizeReachTheChildWhole) {
  for (size_t size :
       {size_t{0}, size_t{100}, size_t{32u << 10}, size_t{40u << 10}, size_t{3u << 20}}) {
    std::string payload = "payload_size:";
    for (size_t i = 0; i < size; ++i) payload.push_back(static_cast<char>('a' + i % 26));
    unsigned long long sum = 0;
    for (unsigned char c : payload) sum = sum * 131 + c;
    ChildRequest request = Req(payload);
    request.stdin_data = "in";
    ChildOutcome o = MustRun(request);
    EXPECT_EQ(o.termination, Termination::kExited) << size;
    EXPECT_EQ(o.result, fmt::format("{} {}", payload.size(), sum)) << size;
  }
  ChildRequest echo = Req("echo_stdin");
  echo.stdin_data = std::string(100000, 'z');
  EXPECT_EQ(MustRun(echo).result, echo.stdin_data);  // stdin alongside an inline job
}

TEST_F(SandboxForkServerTest, TwoHundredRunsLeaveNoStrayProcessOrFd) {
  int server_pid = server_->server_pid();
  MustRun(Req("hello"));  // the first run may allocate lazily
  int fds_before = CountOpenFds();
  pid_t last = 0;
  for (int i = 0; i < 200; ++i) {
    const char* payload = i % 4 == 0   ? "fork"
                          : i % 4 == 1 ? "segv"
                          : i % 4 == 2 ? "hello"
                                       : "exit:1";
    ChildOutcome o = MustRun(Req(payload));
    ASSERT_NE(o.termination, Termination::kWallTimeout) << payload;
    last = o.pid;
  }
  EXPECT_EQ(CountOpenFds(), fds_before);
  EXPECT_EQ(server_->server_pid(), server_pid);
  EXPECT_TRUE(StrayBelow(server_pid, last).empty());
}

TEST(SandboxForkServer, NoSeccompDoubleForkEscapeIsStillCleanedUp) {
  // Without the filter the child can setsid() and double-fork; the server is a child
  // subreaper and sweeps everything below it after the run.
  auto server = StartServer(/*seccomp=*/false);
  ASSERT_NE(server, nullptr);
  auto outcome = server->Run(Req("escape"));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  pid_t grandchild = std::atoi(outcome->result.c_str());
  ASSERT_GT(grandchild, 0) << outcome->result;
  EXPECT_FALSE(ProcessAlive(grandchild));
  EXPECT_TRUE(StrayBelow(server->server_pid(), outcome->pid).empty());
}

// Without Landlock, the mount namespace's view is what keeps host files out of reach: the
// server's root holds only the readable paths, four devices, /proc, /tmp and the scratch
// root. A file in /var/tmp does not exist for a child; with
// confine_reads off (the control) the same file is readable.
TEST(SandboxForkServer, WithoutLandlockTheFilesystemViewHidesHostFiles) {
  // Not under /tmp: with a mount namespace every child has a fresh /tmp anyway.
  const std::string secret = fmt::format("/var/tmp/egca-view-secret-{}", getpid());
  {
    std::ofstream out(secret);
    out << "expected answer";
  }
  auto start = [](bool confine_reads) {
    ForkServerOptions options;
    if (const char* program = std::getenv("EGCA_SANDBOX_TEST_SERVER"); program != nullptr) {
      options.server_binary = program;
    } else {
      options.child_main = TestChild;
    }
    options.use_landlock = false;
    options.confine_reads = confine_reads;
    options.scratch_root = ScratchRoot();
    auto server = ForkServer::Start(std::move(options));
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    return server.ok() ? std::move(server).value() : nullptr;
  };
  auto viewed = start(true);
  ASSERT_NE(viewed, nullptr);
  if (!viewed->capabilities().mount_namespace) {
    std::remove(secret.c_str());
    GTEST_SKIP() << "no mount namespace: " << viewed->capabilities().ToString();
  }
  EXPECT_TRUE(viewed->capabilities().filesystem_view) << viewed->capabilities().ToString();
  auto read = [](ForkServer* server, const std::string& path) {
    auto outcome = server->Run(Req("read:" + path));
    EXPECT_TRUE(outcome.ok()) << outcome.status().ToString();
    return outcome.ok() ? outcome->result : std::string("no outcome");
  };
  EXPECT_EQ(read(viewed.get(), secret), fmt::format("errno={}", ENOENT));
  EXPECT_EQ(read(viewed.get(), "/etc/shadow"), fmt::format("errno={}", ENOENT));
  // What a program needs is there: the system's libraries, the user database, devices.
  EXPECT_EQ(read(viewed.get(), "/etc/passwd").rfind("opened", 0), 0u);
  EXPECT_EQ(read(viewed.get(), "/lib64/ld-linux-x86-64.so.2").rfind("opened", 0), 0u);
  EXPECT_EQ(read(viewed.get(), "/dev/urandom"), "opened, read 64");
  // As root the view's /proc shows a child its own processes only (children run under a
  // uid of their own); unprivileged it is the host's /proc (docs/sandbox.md).
  const std::string caller_cmdline = fmt::format("/proc/{}/cmdline", getpid());
  if (viewed->capabilities().uid_drop) {
    EXPECT_EQ(read(viewed.get(), caller_cmdline), fmt::format("errno={}", ENOENT));
  }
  EXPECT_EQ(read(viewed.get(), "/proc/self/status").rfind("opened", 0), 0u);
  // The control: the host's tree, the secret included.
  auto plain = start(false);
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(plain->capabilities().filesystem_view);
  EXPECT_EQ(read(plain.get(), secret), "opened, read 15");
  std::remove(secret.c_str());
}

TEST(SandboxForkServer, SeccompAndRlimitsAloneStillHold) {
  // The weakest configuration (an unprivileged user without user namespaces or Landlock):
  // violations, limits and cleanup do not depend on the other layers.
  auto server = StartServer(/*seccomp=*/true, /*namespaces=*/false, /*landlock=*/false);
  ASSERT_NE(server, nullptr);
  Capabilities caps = server->capabilities();
  EXPECT_FALSE(caps.network_namespace);
  EXPECT_FALSE(caps.mount_namespace);
  EXPECT_EQ(caps.landlock_abi, 0);
  auto fork_outcome = server->Run(Req("fork"));
  ASSERT_TRUE(fork_outcome.ok());
  EXPECT_EQ(fork_outcome->termination, Termination::kViolation);
  EXPECT_EQ(fork_outcome->violation, "clone");
  auto socket_outcome = server->Run(Req("connect"));
  ASSERT_TRUE(socket_outcome.ok());
  EXPECT_EQ(socket_outcome->violation, "socket");
  Limits l = FastLimits();
  l.output_bytes = 1 << 16;
  auto flood = server->Run(Req("flood", l));
  ASSERT_TRUE(flood.ok());
  EXPECT_EQ(flood->termination, Termination::kOutputLimit);
  auto env = server->Run(Req("env"));
  ASSERT_TRUE(env.ok());
  EXPECT_NE(env->result.find("PYTHONHASHSEED=0\n"), std::string::npos);
  // The private dir is on the scratch root's own filesystem here, not a tmpfs: it is
  // still emptied between runs.
  ASSERT_TRUE(server->Run(Req("deep:300")).ok());
  auto listing = server->Run(Req("list_cwd"));
  ASSERT_TRUE(listing.ok());
  EXPECT_EQ(listing->result, "");
  EXPECT_TRUE(StrayBelow(server->server_pid(), listing->pid).empty());
}

TEST(SandboxForkServer, OneServerPerThreadStartedConcurrently) {
  // Batch runs: each worker thread starts its own server while the others are running.
  int fds_before = CountOpenFds();
  constexpr int kThreads = 4;
  std::vector<std::thread> workers;
  std::vector<int> good(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([t, &good] {
      auto server = StartServer();
      if (server == nullptr) return;
      for (int i = 0; i < 25; ++i) {
        auto o = server->Run(Req(i % 5 == 0 ? "fork" : "echo_stdin"));
        if (!o.ok()) continue;
        bool ok = i % 5 == 0 ? o->termination == Termination::kViolation
                             : o->termination == Termination::kExited && o->result.empty();
        good[t] += ok;
      }
    });
  }
  for (auto& w : workers) w.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(good[t], 25) << "worker " << t;
  EXPECT_EQ(CountOpenFds(), fds_before);
}

TEST(SandboxForkServer, RunFromSeveralThreadsIsSerialized) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  std::vector<std::thread> callers;
  std::vector<int> good(3, 0);
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([t, &good, &server] {
      for (int i = 0; i < 20; ++i) {
        ChildRequest r = Req("echo_stdin");
        r.stdin_data = fmt::format("caller {} run {}", t, i);
        auto o = server->Run(r);
        good[t] += o.ok() && o->result == r.stdin_data;
      }
    });
  }
  for (auto& c : callers) c.join();
  for (int t = 0; t < 3; ++t) EXPECT_EQ(good[t], 20) << "caller " << t;
}

TEST(SandboxForkServer, SigsysReportingNamesViolations) {
  ForkServerOptions options;
  options.child_main = TestChild;
  options.scratch_root = ScratchRoot();
  options.seccomp_notify = false;
  auto server = ForkServer::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto fork_outcome = server.value()->Run(Req("fork"));
  ASSERT_TRUE(fork_outcome.ok());
  EXPECT_EQ(fork_outcome->termination, Termination::kViolation);
  EXPECT_EQ(fork_outcome->violation, "clone");
  // The documented limit of this mode: with SIGSYS blocked the call stays unnamed.
  auto blocked = server.value()->Run(Req("fork_sigsys_blocked"));
  ASSERT_TRUE(blocked.ok());
  EXPECT_EQ(blocked->termination, Termination::kViolation);
  EXPECT_EQ(blocked->violation, "unknown");
}

TEST(SandboxForkServer, PeerDescriptorConnectsTwoChildrenOfTwoServers) {
  auto a = StartServer();
  auto b = StartServer();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  ChildRequest writer = Req("peer_write:hello peer");
  writer.peer_fd = pair[0];
  ChildRequest echo = Req("peer_echo");
  echo.peer_fd = pair[1];
  StatusOr<ChildOutcome> echoed = Internal("not run");
  std::thread other([&] { echoed = b->Run(echo); });
  auto wrote = a->Run(writer);
  other.join();
  ASSERT_TRUE(wrote.ok()) << wrote.status().ToString();
  ASSERT_TRUE(echoed.ok()) << echoed.status().ToString();
  EXPECT_EQ(echoed->result, "hello peer");
  EXPECT_EQ(wrote->result, "got hello peer");
  // Run() closed both ends: a descriptor of ours would have kept the echo waiting.
  EXPECT_EQ(fcntl(pair[0], F_GETFD), -1);
  EXPECT_EQ(fcntl(pair[1], F_GETFD), -1);
  // Without a peer, fd 4 is closed in the next child of the same server.
  auto fds = a->Run(Req("fds"));
  ASSERT_TRUE(fds.ok());
  EXPECT_EQ(fds->result.find(" 4 "), std::string::npos) << fds->result;
}

TEST(SandboxForkServer, ServerCrashIsAnErrorThenRestarts) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  int first_pid = server->server_pid();
  ASSERT_TRUE(server->Run(Req("hello")).ok());
  kill(first_pid, SIGKILL);
  auto failed = server->Run(Req("hello"));
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  auto again = server->Run(Req("hello"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->result, "result bytes");
  EXPECT_NE(server->server_pid(), first_pid);
}

TEST(SandboxForkServer, ServerKilledDuringARunTakesTheChildWithIt) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  int server_pid = server->server_pid();
  std::thread killer([server_pid] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    kill(server_pid, SIGKILL);
  });
  auto started = std::chrono::steady_clock::now();
  Limits long_wall = FastLimits();
  long_wall.wall_seconds = 120;
  auto failed = server->Run(Req("sleep", long_wall));
  killer.join();
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  // Run() returns when the server dies, not at the child's 120 s wall limit (60 s: a
  // margin no machine needs, so the check does not depend on its speed).
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(60));
  // The sleeping child had the server as parent and PR_SET_PDEATHSIG(SIGKILL). Polled
  // until gone (up to 30 s: an upper bound for a failure, not a speed requirement).
  for (int i = 0; i < 3000 && !ProcessesRelatedTo(server_pid).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (pid_t p : ProcessesRelatedTo(server_pid)) {
    EXPECT_FALSE(ProcessAlive(p)) << "pid " << p << " outlived the server";
  }
  auto again = server->Run(Req("hello"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
}

TEST(SandboxForkServer, DestructorLeavesNothingBehind) {
  int pid = 0;
  {
    auto server = StartServer();
    ASSERT_NE(server, nullptr);
    pid = server->server_pid();
    ASSERT_TRUE(server->Run(Req("hello")).ok());
  }
  EXPECT_FALSE(ProcessAlive(pid));
  struct stat st {};
  EXPECT_NE(stat(fmt::format("{}/srv-{}", ScratchRoot(), pid).c_str(), &st), 0);
}

TEST(SandboxForkServer, WarmUpFailureIsAnError) {
  ForkServerOptions options;
  options.child_main = TestChild;
  options.scratch_root = ScratchRoot();
  options.warm_up = [] { throw std::runtime_error("no interpreter"); };
  auto server = ForkServer::Start(std::move(options));
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("no interpreter"), std::string::npos);
}

TEST(SandboxForkServer, WarmUpStateIsInheritedByChildren) {
  static std::string warmed;
  ForkServerOptions options;
  options.scratch_root = ScratchRoot();
  options.warm_up = [] { warmed = "warm"; };
  options.child_main = [](std::string_view, int fd) {
    WriteAllFd(fd, warmed);
    return 0;
  };
  auto server = ForkServer::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto o = server.value()->Run(Req(""));
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->result, "warm");
  EXPECT_EQ(warmed, "");  // warm-up ran in the server, not in the caller
}

TEST(SandboxForkServer, BadLimitsAreInvalidArguments) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  Limits l = FastLimits();
  l.wall_seconds = 0;
  auto outcome = server->Run(Req("hello", l));
  EXPECT_EQ(outcome.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(outcome.status().message().find("wall_seconds"), std::string::npos);
  EXPECT_TRUE(server->Run(Req("hello")).ok());
}

TEST(SandboxForkServer, MissingChildMainIsInvalid) {
  ForkServerOptions options;
  auto server = ForkServer::Start(std::move(options));
  EXPECT_EQ(server.status().code(), StatusCode::kInvalidArgument);
}

TEST(SandboxForkServer, ServerGetsEveryProtectionTheProbeFinds) {
  // A running server must not silently lose a layer the machine allows (it once lost the
  // user namespace to an ordering bug).
  Capabilities probed = ProbeCapabilities();
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->capabilities().ToString(), probed.ToString());
}

TEST(SandboxForkServer, ProbeReportsSeccomp) {
  Capabilities caps = ProbeCapabilities();
  EXPECT_TRUE(caps.seccomp) << caps.ToString();
  if (geteuid() == 0) {
    EXPECT_TRUE(caps.uid_drop);
  }
}

// Abort() from another thread ends a Run() that would otherwise wait for its child's long
// wall limit: the server and its child are gone, Run() says UNAVAILABLE, and the next
// Run() starts a new server (the executor's reused test process relies on this).
TEST(SandboxForkServerAbort, AbortEndsARunningRunAndTheNextRunRestarts) {
  std::unique_ptr<ForkServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  const int first_pid = server->server_pid();
  Limits l = FastLimits();
  l.wall_seconds = 600;  // only Abort() can end this run in time
  StatusOr<ChildOutcome> outcome = Internal("not run");
  std::thread runner([&] { outcome = server->Run(Req("sleep", l)); });
  // Abort is safe at any moment; repeat until the run has ended (before the child started,
  // the server is killed all the same and Run() reports it).
  for (int i = 0; i < 600 && outcome.status().message() == "not run"; ++i) {
    server->Abort();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  runner.join();
  EXPECT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.status().code(), StatusCode::kUnavailable) << outcome.status().ToString();
  EXPECT_FALSE(ProcessAlive(first_pid));
  ChildOutcome again = server->Run(Req("exit:0", FastLimits())).value();
  EXPECT_EQ(again.termination, Termination::kExited);
  EXPECT_NE(server->server_pid(), first_pid);
}

}  // namespace
}  // namespace egca::sandbox
