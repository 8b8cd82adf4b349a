// Verdicts: what happened when a candidate program ran one test. A candidate failing in any
// way is a verdict value, never an egca error.
#pragma once

#include <cstdint>
#include <string>

namespace egca::sandbox {

enum class VerdictKind {
  kOk,            // ran the test to completion and the harness saw it complete
  kWrongAnswer,   // ran to completion, result/stdout did not match the expectation
  kSyntaxError,   // the program does not compile (line, column, message)
  kRuntimeError,  // uncaught exception (type, message, line of the innermost user frame),
                  // including a failing assertion in an assertion-based test
  kTimeout,       // wall-clock or CPU time limit
  kMemoryLimit,   // address-space limit hit (MemoryError or killed while at the limit)
  kOutputLimit,   // wrote more than the output limit to stdout/stderr
  kKilled,        // died by a signal not caused by a limit, or exited before its test ran
  kViolation,     // attempted a forbidden operation (fork, exec, socket, kill, ...)
};

// "OK", "WRONG_ANSWER", ... (stable names used in text dumps and JSON).
const char* VerdictName(VerdictKind kind);
// Parses a stable name; returns false if unknown.
bool ParseVerdictName(const std::string& name, VerdictKind* out);

// Where one sandboxed run's wall time went (seconds, CLOCK_MONOTONIC). The server times
// its own steps; the boundaries inside the child are stamped by the sandbox's code around
// child_main into a page the program could overwrite, so they are clamped to the run and
// serve as diagnostics only, never for limits or verdicts. A phase that did not happen
// (the child was killed inside child_main: no main, no exit) is 0.
struct ChildPhases {
  double prepare = 0;  // server: private dir check, stdin memfd, pipes, until fork()
  double fork = 0;     // server: the fork() call itself (copying the page tables)
  double isolate = 0;  // child: descriptors, rlimits, uid, Landlock, seccomp
  double main = 0;     // child: child_main (for the executor: the Python harness)
  double exit = 0;     // child_main returned -> reaped (address-space teardown, wake-up)
  double collect = 0;  // server: after the reap (drain, sweep, empty the private dir)
};

struct Verdict {
  VerdictKind kind = VerdictKind::kOk;
  bool passed() const { return kind == VerdictKind::kOk; }

  // kSyntaxError / kRuntimeError: where and what. line is 1-based, column 0-based
  // (UTF-8 bytes); 0 = unknown. end_line/end_column: the offending statement's end.
  std::string error_type;     // "SyntaxError", "ZeroDivisionError", ...
  std::string message;        // exception/diagnostic message (bounded)
  int32_t line = 0;
  int32_t column = 0;
  int32_t end_line = 0;
  int32_t end_column = 0;

  int signal = 0;             // kKilled / kViolation: the signal, if any
  std::string detail;         // kViolation: which operation; kKilled: how it ended early
  std::string actual;         // kOk / kWrongAnswer: returned value (canonical repr) or stdout
  std::string expected;       // kWrongAnswer: what the test wanted
  double wall_seconds = 0;
  double cpu_seconds = 0;
  uint64_t max_rss_bytes = 0;
  uint64_t minor_faults = 0;  // the child's page faults (copy-on-write of the warm heap)
  ChildPhases phases;         // where the run's time went (diagnostics)
};

}  // namespace egca::sandbox
