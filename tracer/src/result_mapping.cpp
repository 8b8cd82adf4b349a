#include "result_mapping.h"

#include <fmt/format.h>

#include <csignal>
#include <cstring>

namespace egca::tracer {
namespace {

using sandbox::Termination;
using sandbox::Verdict;
using sandbox::VerdictKind;

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

void FromRecord(const proto::ExecResult& r, Verdict* v) {
  v->error_type = r.error_type();
  v->message = r.message();
  v->line = r.line();
  v->column = r.column();
  v->end_line = r.end_line();
  v->end_column = r.end_column();
  v->actual = r.actual();
  v->expected = r.expected();
  v->detail = r.detail();
  switch (r.outcome()) {
    case proto::EXEC_OK:
      v->kind = VerdictKind::kOk;
      break;
    case proto::EXEC_WRONG_ANSWER:
      v->kind = VerdictKind::kWrongAnswer;
      break;
    case proto::EXEC_SYNTAX_ERROR:
      v->kind = VerdictKind::kSyntaxError;
      break;
    case proto::EXEC_RUNTIME_ERROR:
      v->kind = VerdictKind::kRuntimeError;
      break;
    case proto::EXEC_MEMORY_ERROR:
      v->kind = VerdictKind::kMemoryLimit;
      break;
    case proto::EXEC_OUTPUT_LIMIT:
      v->kind = VerdictKind::kOutputLimit;
      break;
    case proto::EXEC_EXITED:
      v->kind = VerdictKind::kKilled;
      break;
    default:
      v->kind = VerdictKind::kKilled;
      if (v->detail.empty()) v->detail = "no valid completion record";
      break;
  }
}

}  // namespace

StatusOr<Verdict> MapVerdict(const sandbox::ChildOutcome& outcome, const proto::ExecResult* record,
                             const sandbox::Limits& limits) {
  Verdict v;
  v.wall_seconds = outcome.wall_seconds;
  v.cpu_seconds = outcome.cpu_seconds;
  v.max_rss_bytes = outcome.max_rss_bytes;
  if (record != nullptr && record->retrace_follows() &&
      record->outcome() != proto::EXEC_TEST_ERROR) {
    // Written before the traced second run started (retrace_visible_failures): whatever
    // stopped the child after that (a limit, a signal) only cut the trace short.
    FromRecord(*record, &v);
    return v;
  }
  switch (outcome.termination) {
    case Termination::kWallTimeout:
      v.kind = VerdictKind::kTimeout;
      v.detail = fmt::format("wall-clock limit of {:g} s", limits.wall_seconds);
      return v;
    case Termination::kCpuTimeout:
      v.kind = VerdictKind::kTimeout;
      v.detail = fmt::format("CPU limit of {:g} s", limits.cpu_seconds);
      return v;
    case Termination::kOutputLimit:
      v.kind = VerdictKind::kOutputLimit;
      v.detail = fmt::format("wrote more than {} bytes", limits.output_bytes);
      return v;
    case Termination::kViolation:
      v.kind = VerdictKind::kViolation;
      v.signal = SIGSYS;
      v.detail = outcome.violation.empty() ? "forbidden system call" : outcome.violation;
      return v;
    case Termination::kExited:
    case Termination::kSignaled:
      break;
  }
  if (record != nullptr) {
    if (record->outcome() == proto::EXEC_TEST_ERROR) {
      return InvalidArgument("malformed test: " + record->message());
    }
    FromRecord(*record, &v);
    return v;
  }
  const bool near_memory_limit =
      limits.memory_bytes > 0 && static_cast<double>(outcome.max_rss_bytes) >=
                                     kNearMemoryLimit * static_cast<double>(limits.memory_bytes);
  if (outcome.termination == Termination::kSignaled) {
    v.signal = outcome.signal;
    if (near_memory_limit) {
      v.kind = VerdictKind::kMemoryLimit;
      v.detail = fmt::format("killed by {} at {} MiB resident", SignalName(outcome.signal),
                             outcome.max_rss_bytes >> 20);
      return v;
    }
    v.kind = VerdictKind::kKilled;
    v.detail = fmt::format("killed by {} before the test completed", SignalName(outcome.signal));
    return v;
  }
  if (outcome.stderr_data.find("MemoryError") != std::string::npos || near_memory_limit) {
    v.kind = VerdictKind::kMemoryLimit;
    v.error_type = "MemoryError";
    v.detail = fmt::format("exited with code {} out of memory", outcome.exit_code);
    return v;
  }
  v.kind = VerdictKind::kKilled;
  v.detail = fmt::format("exited with code {} before the test completed", outcome.exit_code);
  return v;
}

}  // namespace egca::tracer
