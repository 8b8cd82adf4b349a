// From what the sandbox saw (ChildOutcome) and what the harness reported (the completion
// record) to one Verdict. Pure functions: unit-tested without a sandbox or interpreter.
#pragma once

#include "egca/core/status.h"
#include "egca/sandbox/fork_server.h"
#include "egca/sandbox/verdict.h"
#include "egca/tracer/exec.pb.h"

namespace egca::tracer {

// `record` is the parsed completion record, or null when the child wrote none (or one
// that did not parse). EXEC_OK (the run completed) maps to OK: the caller then compares
// (judge.h). Precedence:
//   1. limits the server enforced: wall/CPU timeout -> TIMEOUT, output -> OUTPUT_LIMIT,
//      seccomp -> VIOLATION; they win over a record (the test did not end normally);
//   2. a record: its outcome (EXITED -> KILLED: the program ended before its test did);
//   3. no record: killed by a signal -> MEMORY_LIMIT if its peak RSS reached
//      `kNearMemoryLimit` of the address-space limit, else KILLED; exited -> KILLED
//      ("exited with code N before the test completed"), or MEMORY_LIMIT when stderr
//      shows a MemoryError.
// A record with EXEC_TEST_ERROR is egca's error (the test is malformed): InvalidArgument.
StatusOr<sandbox::Verdict> MapVerdict(const sandbox::ChildOutcome& outcome,
                                      const proto::ExecResult* record,
                                      const sandbox::Limits& limits);

// Fraction of the address-space limit a peak RSS must reach for a signal death to count
// as MEMORY_LIMIT.
inline constexpr double kNearMemoryLimit = 0.8;

}  // namespace egca::tracer
