// One candidate process per program for its assert tests (docs/executor.md, "One candidate
// process per program"): the process-wide switch, kept out of the public RunOptions.
//
// Executor::RunAll runs a program's assert tests in two processes as one batch (one
// candidate process, one test-process session, test after test) whenever their graded run
// is untraced. On by default. Off: EGCA_ASSERT_BATCH=0 in the environment (read at each
// RunAll, for the comparisons of egca-run, egca-batch and the benches), or
// SetAssertBatching(false), which takes precedence (tests).
#pragma once

namespace egca::tracer {

enum class AssertBatching { kFromEnvironment, kOn, kOff };

void SetAssertBatching(AssertBatching mode);
bool AssertBatchingEnabled();

}  // namespace egca::tracer
