// Fork server: runs untrusted work in isolated child processes forked from a warm process.
//
// Start() starts one server process: in fork mode a fork of the caller, in exec mode a
// separate program (`ForkServerOptions::server_binary`, whose main() calls ServeMain())
// started with an empty environment and no descriptor but its channel, so that neither
// the server nor its children hold anything of the caller's memory. The server runs
// `warm_up` once (for
// the tracer: initialize the embedded interpreter and import the harness), then serves
// requests one at a time: for each it forks a child, applies isolation (process group,
// rlimits, private working directory, seccomp filter, namespaces where permitted), and calls
// `child_main` in the child. The server enforces the wall-clock limit, output limit and
// collects resource usage from outside the child, kills the child's whole process group,
// and returns a ChildOutcome. A run thus costs a fork, not an interpreter start.
//
// This module knows nothing about Python: the request payload and the child's result are
// opaque bytes (the tracer puts serialized protobuf messages in them).
//
// Threading: a ForkServer serves one Run() at a time (Run() is internally serialized);
// use one server per worker for parallelism. In fork mode, call Start() early, before the
// calling process starts threads of its own where possible (the server is a fork of the
// caller): forks by Start()/restarts are serialized process-wide and the server closes
// every inherited descriptor, but `warm_up` must not need a lock another caller thread may
// have held at the fork. Exec mode has no such constraint (posix_spawn, then a fresh
// program). See docs/sandbox.md for the isolation layers and what holds when the caller
// is not root.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "egca/core/status.h"
#include "egca/sandbox/verdict.h"  // ChildPhases

namespace egca::sandbox {

struct Limits {
  double wall_seconds = 10.0;           // wall clock, enforced by the server (SIGKILL)
  double cpu_seconds = 10.0;            // CPU time: the server kills at this value (checked
                                        // every 50 ms); RLIMIT_CPU (rounded up) backs it
  uint64_t memory_bytes = 2ull << 30;   // RLIMIT_AS: address space, including the warm
                                        // server's mappings the child inherits
  uint64_t output_bytes = 8ull << 20;   // stdout + stderr captured; more is OUTPUT_LIMIT
  uint64_t result_bytes = 256ull << 20; // result channel (traces); more is cut and flagged
  uint64_t file_bytes = 16ull << 20;    // RLIMIT_FSIZE for files in the private directory
  int max_threads = 32;                 // threads in the child (processes are forbidden):
                                        // RLIMIT_NPROC when children get their own uid (root)
  int max_open_files = 256;             // RLIMIT_NOFILE
};

// How the child ended, as seen from outside it.
enum class Termination {
  kExited,       // exited on its own (exit_code valid)
  kSignaled,     // killed by a signal it did not get from the server (signal valid)
  kWallTimeout,  // the server killed it at the wall-clock limit
  kCpuTimeout,   // the server's CPU accounting, or SIGXCPU / SIGKILL from RLIMIT_CPU
  kOutputLimit,  // the server killed it for writing more than output_bytes
  kViolation,    // the seccomp filter stopped a forbidden system call (`violation` names it)
};

const char* TerminationName(Termination t);

struct ChildRequest {
  std::string payload;     // given to child_main unchanged
  std::string stdin_data;  // fed to the child's fd 0, then EOF
  Limits limits;
  // Owned by Run(), which closes it once it is sent (or on an error before); -1: none. A
  // socket the child gets as fd 4 (kChildPeerFd), passed to the server with the request
  // (SCM_RIGHTS). Two children of two servers running at the same time can so talk to
  // each other and to nothing else (the executor's test process and the candidate
  // process it calls).
  int peer_fd = -1;
};

// The child's descriptor for ChildRequest::peer_fd.
constexpr int kChildPeerFd = 4;

struct ChildOutcome {
  Termination termination = Termination::kExited;
  int exit_code = 0;
  int signal = 0;               // kSignaled: the signal; kViolation: SIGSYS
  std::string violation;        // kViolation: name of the forbidden system call ("clone")
  std::string stdout_data;      // at most limits.output_bytes (combined with stderr)
  std::string stderr_data;
  std::string result;           // everything child_main wrote to result_fd
  bool result_truncated = false;
  double wall_seconds = 0;
  double cpu_seconds = 0;       // user + system of the child's process group
  uint64_t max_rss_bytes = 0;
  uint64_t minor_faults = 0;    // page faults served without I/O (copy-on-write of the
                                // warm heap, first touches); from wait4's rusage
  ChildPhases phases;
  int pid = 0;                  // the child's pid as the caller sees it (diagnostics, tests)
};

// What a child needs to read to run a dynamically linked program and an interpreter from
// the system's packages: /usr/lib (shared libraries, Python's stdlib, locales), /lib,
// /lib64, /usr/lib64, time zones, /etc/ld.so.cache, /etc/localtime, /etc/ssl, and the
// user and group databases (pwd/grp lookups).
std::vector<std::string> DefaultReadablePaths();

// Runs in the forked child after isolation is applied. `payload` is ChildRequest::payload;
// write the result bytes to `result_fd` (blocking writes; the server drains it
// concurrently). The return value becomes the child's exit code. Must not return into
// the server's code: the server calls _exit() with it.
using ChildMain = std::function<int(std::string_view payload, int result_fd)>;

struct ForkServerOptions {
  // Fork mode (server_binary empty): both run in a fork of the caller.
  std::function<void()> warm_up;  // runs once in the server process; may be empty
  ChildMain child_main;           // required in fork mode; must be empty in exec mode
  // Exec mode: absolute path of the server program (its main() calls ServeMain(), which
  // holds its own warm-up and child main). It is started with posix_spawn: empty
  // environment, fds 0-2 on /dev/null, the channel on fd 3 and no other descriptor, own
  // session, default signal dispositions. The options below travel to it over the
  // channel; `server_config` is handed to its warm-up unchanged (opaque bytes).
  std::string server_binary;
  std::string server_config;
  // Private working directories are created under this directory (made if missing).
  std::string scratch_root = "/tmp/egca-sandbox";
  bool install_seccomp = true;    // off only for debugging egca itself
  // Namespaces (network + mount; a user namespace when unprivileged) and Landlock are used
  // where the kernel permits; these switch them off (to measure their cost, or on hosts
  // where they misbehave). ProbeCapabilities() reports what the machine allows.
  bool use_namespaces = true;
  bool use_landlock = true;
  // With Landlock: children may read (and map executable) only beneath these paths, their
  // private directory, /dev/null, /dev/zero, /dev/urandom, /dev/random and their own
  // /proc/<pid>: no data set, test file, user file or other process's /proc entry. With a
  // mount namespace, the same paths are all that exists in the server's root
  // (Capabilities::filesystem_view). Paths missing on the host are skipped.
  // confine_reads = false leaves reads unconfined and the host's tree in view.
  bool confine_reads = true;
  std::vector<std::string> readable_paths = DefaultReadablePaths();
  // How a forbidden system call reaches the server. true: a seccomp notification listener
  // (the call is always named, even when the program blocked every signal, as glibc's
  // posix_spawn does). false: a SIGSYS handler in the child, ~0.4 ms cheaper per run, but a
  // violation with SIGSYS blocked is reported as "unknown".
  bool seccomp_notify = true;
  // Extra environment variables for the server and its children, set after the fixed
  // environment (see docs/sandbox.md: PYTHONHASHSEED=0, HOME=TMPDIR=the private directory,
  // LANG=C.UTF-8, TZ=UTC, PATH=/usr/bin:/bin). The caller's environment is not inherited.
  std::vector<std::pair<std::string, std::string>> extra_env;
  // Size of the tmpfs mounted over scratch_root when the server has a mount namespace
  // (bounds what all children of this server can store). Without one, private
  // directories live on scratch_root's own filesystem and only RLIMIT_FSIZE bounds each
  // file.
  uint64_t scratch_tmpfs_bytes = 512ull << 20;
};

// Which protections are active on this machine for this user (for README/--version
// output and tests that must skip when unprivileged).
struct Capabilities {
  bool seccomp = false;
  bool network_namespace = false;  // no network at all (else: seccomp blocks sockets)
  bool mount_namespace = false;    // private /tmp and read-only view of the rest
  bool pid_namespace = false;      // always false: not used (docs/sandbox.md says why)
  bool uid_drop = false;           // children run as an unprivileged uid
  bool user_namespace = false;     // namespaces come from an unprivileged user namespace
  int landlock_abi = 0;            // 0: no Landlock; else writes confined to the private dir
  // The server and its children live in a root holding only readable_paths, /dev's four
  // character devices, /proc, /tmp and the scratch root (pivot_root in the mount
  // namespace; confine_reads): no data set or user file exists for them, Landlock or not.
  bool filesystem_view = false;
  std::string ToString() const;
};

class ForkServer {
 public:
  // Forks the server and waits until warm_up has finished. Errors: the fork or the
  // warm-up failed (the message says which).
  static StatusOr<std::unique_ptr<ForkServer>> Start(ForkServerOptions options);
  ~ForkServer();  // stops the server; no process it started outlives it
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  // Runs one request in a fresh child. A candidate misbehaving is an outcome, not an
  // error. Errors: INVALID_ARGUMENT for non-positive limits; UNAVAILABLE when the server
  // died or hung (it is restarted, warm_up included, on the next call); INTERNAL when a
  // child could not be isolated (the message names the step) or the restart failed.
  StatusOr<ChildOutcome> Run(const ChildRequest& request);

  // Kills the server process (and with it its children) now, from any thread, also while
  // another thread is inside Run(): that Run() then returns UNAVAILABLE and the next one
  // restarts the server. For a caller whose own deadline for a long-lived child passed
  // (the executor's reused test process). No effect when no server is running.
  void Abort();

  // Protections the current server process put in place (after a restart: the new one's).
  Capabilities capabilities() const;
  // The server's pid (0 when it is not running); for diagnostics and crash tests.
  int server_pid() const;

  class Impl;

 private:
  explicit ForkServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

Capabilities ProbeCapabilities();

// What a server program (exec mode) runs: its warm-up and its children's main.
struct ServeHooks {
  // Runs once in the server, after its isolation is set up, with
  // ForkServerOptions::server_config. Failure: throw a std::exception; its what() reaches
  // ForkServer::Start()'s error. May be empty.
  std::function<void(std::string_view config)> warm_up;
  ChildMain child_main;  // required
};

// main() of a server program: `return egca::sandbox::ServeMain(argc, argv, hooks);`.
// Started by ForkServer (exec mode), it reads its options from the channel (fd 3), sets
// up isolation, warms up, reports ready and serves requests until the caller closes the
// channel; it never returns then. Started any other way (from a shell), it prints one
// line saying what it is to stderr and returns 2.
int ServeMain(int argc, char** argv, ServeHooks hooks);

}  // namespace egca::sandbox
