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
};

}  // namespace egca::sandbox
