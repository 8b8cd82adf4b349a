// Isolation steps: what the server sets up once for itself and all its children
// (namespaces, mounts, environment) and what each child applies to itself after fork
// (rlimits, uid, Landlock, seccomp). Private to the sandbox module.
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "egca/sandbox/fork_server.h"

namespace egca::sandbox::internal {

// A page shared by the server and its children (MAP_SHARED, reset before each fork)
// through which a child reports what the server cannot see from outside: the system call
// its SIGSYS handler trapped, or why its isolation setup failed.
struct ViolationRecord {
  uint32_t magic;  // kViolationMagic when `syscall_nr` is valid
  int32_t syscall_nr;
  uint32_t setup_failed;  // nonzero: `setup_error` says which isolation step failed
  char setup_error[256];
  // Phase timestamps the child's sandbox code writes (ChildPhases; diagnostics only: the
  // program can overwrite them). CLOCK_MONOTONIC nanoseconds; 0 = not reached.
  int64_t started_ns;    // first instruction after fork
  int64_t isolated_ns;   // isolation done (a spare child then waits for its job)
  int64_t job_ns;        // the job's limits applied, child_main about to start
  int64_t ready_minflt;  // a spare's minor faults when it began to wait for its job
  int64_t main_done_ns;  // child_main returned
};
constexpr uint32_t kViolationMagic = 0x53595331;

// Done once in the server process, before warm-up. Creates namespaces where permitted
// (root: net + mount; unprivileged: inside a user namespace if the kernel allows it),
// remounts the filesystem read-only with tmpfs over /tmp and over `scratch_root`, and
// fills in what actually took effect. Never fails: each protection degrades separately.
Capabilities SetUpServerIsolation(const ForkServerOptions& options);

// Replaces the server's environment (inherited by warm-up and every child) with the fixed,
// deterministic one; HOME and TMPDIR point at `work_dir`, the per-run private directory
// (the same path for every run of this server, re-created empty each time).
void ApplyServerEnvironment(const ForkServerOptions& options, const std::string& work_dir);

// The uid/gid children of the server run as when uid_drop is possible: unique per live
// server and `slot` (0 or 1). A server's running child and the spare it forked ahead for
// the next job take alternate slots, so RLIMIT_NPROC counts exactly one child's threads.
uid_t RunUidForServer(pid_t server_pid, int slot);

struct ChildPlan {
  std::string work_dir;  // the child's private directory (cwd, HOME, TMPDIR)
  bool drop_uid;
  uid_t run_uid;
  pid_t server_pid;
  bool drop_capabilities;  // user-namespace mode: shed the namespace's capabilities
  int landlock_abi;
  // Landlock confines reads too: only these paths (plus the private directory, /dev/null,
  // /dev/zero, /dev/urandom, /dev/random and /proc/self) are readable. Null: reads are
  // not confined.
  const std::vector<std::string>* readable_paths;
  bool seccomp;
  std::vector<sock_filter>* seccomp_program;  // kTrap program; patched in place
  std::vector<sock_filter>* notify_program;   // kNotify program or null; patched in place
  int notify_sock;             // where the notification listener is sent to the server, or -1
  ViolationRecord* violation;  // shared with the server
};

// What a forbidden system call does: kNotify stops the calling thread and tells the server
// through a listener fd (SECCOMP_RET_USER_NOTIF); kTrap sends SIGSYS to the child, whose
// handler records the call in the shared page and kills the child.
enum class ViolationAction { kNotify, kTrap };

// Compiles the children's seccomp filter (once per server). Rules about the child's own
// pid hold a placeholder that IsolateChild() replaces. Returns an error message or "".
std::string BuildSeccompFilter(ViolationAction action, std::vector<sock_filter>* program);

// In the forked child: applies the uid drop, Landlock and the seccomp filter in that order
// (what every job of the server gets alike: a spare child applies it before its job
// arrives). Returns an error message (empty on success); the child then exits with
// kIsolationFailedExit so the server reports the run as an egca error.
std::string IsolateChild(const ChildPlan& plan);

// In the child, once its job arrived and before child_main: the job's rlimits (CPU,
// address space, file size, open files, no core files or message queues; with `drop_uid`
// the thread count, RLIMIT_NPROC, which the child's own uid counts). Only lowers limits,
// so it works after the uid drop and under the seccomp filter (prlimit64 on itself).
std::string ApplyChildLimits(const Limits& limits, bool drop_uid);
constexpr int kIsolationFailedExit = 121;
// First byte a child writes to its result channel, once isolated (stripped by the server).
constexpr char kIsolatedMarker = '\x01';

// Human-readable name of a syscall number on this architecture ("clone", "socket", ...).
std::string SyscallName(int nr);

}  // namespace egca::sandbox::internal
