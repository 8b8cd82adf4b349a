// Executor: runs an untrusted Python program on tests, one sandboxed child per test.
//
// Create() starts a sandbox::ForkServer whose server process initializes an embedded,
// isolated CPython 3.11 (Debian's stdlib only, fixed hash seed), imports egca's harness
// and pre-imports the modules solutions commonly use. The server is its own small program
// (egca-py-server, exec'd: it holds nothing of the calling process, whatever the caller
// has loaded). Each test then costs one fork of that warm interpreter: the child compiles
// the program (filename "<candidate>"), runs it
// on the test, and writes a completion record back only after the test finished, so a
// program that exits or dies early never passes a test it did not run.
//
//   auto executor = Executor::Create({});
//   TestResult r = executor.value()->Run(source, TestCase::Call("add", "[1, 2]", "3"), {});
//   if (r.verdict.passed()) ...
//
// A candidate failing (syntax error, exception, timeout, crash, forbidden system call) is a
// verdict in the result; a Status error means egca itself failed (bad test JSON, the fork
// server could not be started or died twice in a row).
//
// Threading: one Executor serves one call at a time; use one Executor per thread (each
// owns its own fork server), or ExecutorPool.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/status.h"
#include "egca/sandbox/fork_server.h"
#include "egca/sandbox/verdict.h"
#include "egca/tracer/test_case.h"
#include "egca/tracer/trace_options.h"

namespace egca::tracer {

namespace proto {
class Trace;  // egca/tracer/trace.pb.h
}  // namespace proto

// How the candidate's execution is recorded while it runs its test.
enum class TraceMode {
  kNone,            // no tracing (fastest; verdicts only)
  kNative,          // egca's C-level trace function (_egca_trace); TestResult::trace
  kPythonSettrace,  // baseline for overhead benchmarks: a pure-Python sys.settrace hook
                    // copying dict(frame.f_locals) of "<candidate>" frames at each line
};

// "none", "native", "python_settrace".
const char* TraceModeName(TraceMode mode);
bool ParseTraceMode(std::string_view name, TraceMode* out);

struct RunOptions {
  sandbox::Limits limits;  // per test: wall/CPU seconds, address space, output bytes, ...
  // APPS evaluation conventions: execute APPS's standard import header (`import sys,
  // time, itertools, math, ...; from typing import List ...`, without numpy) in the
  // program's namespace first, and run a standard-input program whose module level has a
  // `return` as the body of a function, as APPS's wrapper does. Both keep the program's
  // own line numbers in verdicts and traces (the header is compiled separately, the
  // wrapping is done on the AST).
  bool apps_import_header = false;
  TraceMode trace_mode = TraceMode::kNone;
  TraceOptions trace;  // used when trace_mode == kNative
  // kNative: return TestResult::trace only for a test that did not pass; a passing run's
  // trace is dropped by the parent (the child never knows whether it passed: it does not
  // see the expected value). For grading with tracing on, where only a failing test's
  // trace is wanted.
  bool trace_failures_only = false;
  // kNative: run the test untraced; only if it fails, run it again traced: in the same
  // child for a failure the child sees itself (an early exit, a failing assert, an
  // exception), in a second child for a wrong answer (only the parent, which judges, knows
  // it). An assert test in two processes (one test): the test process tells the
  // candidate process once the test has failed, and the candidate process replays the
  // calls it served into a fresh run of the program, traced (TestResult::trace_replayed);
  // a replay that diverges (the program is not deterministic) or has more than 8 MiB of
  // calls to replay is retraced in a second pair. The verdict is always the untraced
  // run's; TestResult::trace is the second run's (a passing test has none; a second run
  // stopped by a limit leaves none).
  bool retrace_failures = false;
  // With retrace_failures: also retrace a test whose candidate code raised an exception
  // (an exception located in the program; a failing assert of the test code is always
  // retraced). The router turns this off when run-time errors are SYNTAX (no trace needed).
  bool retrace_exceptions = true;
  // kNative: wall seconds the traced run may take (0 = only the test's limits): with
  // retrace_failures the second run, whose verdict does not count; otherwise the run
  // itself, whose verdict is then RUNTIME_ERROR TraceStopped when the budget ran out (for
  // runs where only the trace is wanted, e.g. the bounded trace of a timed-out test). Past
  // the budget the program is stopped and its trace keeps the prefix (Trace.truncation =
  // TIME_BUDGET).
  double trace_seconds = 0;
  // With trace_seconds (not a retrace): when the budget runs out, first raise TimeoutError
  // in the program, recorded in the trace (where a looping program was: the bounded trace
  // of a timed-out test localizes on it), then stop the program 50 ms later if it goes on.
  bool trace_budget_raises = false;
  // Float comparison of returned values and stdout tokens: two floats within
  // |a - b| <= abs_tolerance + rel_tolerance * |b| are equal (numpy.allclose's rule);
  // integers, and an integer against a float, compare exactly (Python's ==).
  double float_rel_tolerance = 1e-5;
  double float_abs_tolerance = 1e-8;
  // APPS's own leniency (its checker compares stdout tokens with np.allclose): integers
  // too compare with the float tolerance (`123457` passes for `123456`). Off by default: a
  // reward a policy collects by being off by one is a hack. On only where agreeing with
  // APPS's published numbers matters (egca-run/egca-eval --apps-allclose).
  bool apps_allclose = false;
  // Bound on Verdict::actual / Verdict::expected / messages (bytes, UTF-8 safe cut).
  uint32_t max_report_bytes = 2048;
  // RunAll: stop after the first test that does not pass (the rest count as not passed).
  bool stop_on_first_failure = false;
  // Assert tests run in two processes: the test code in a test process that never runs
  // candidate code, the program behind proxies in the candidate process; plain values,
  // and objects of the test's own classes and containers (by value-result), cross
  // (docs/executor.md). true: every assert test in the candidate's process, as before
  // issue 12 (weaker: the program can reach the test code). For comparisons only
  // (bench/sandbox_throughput).
  bool assert_tests_in_one_process = false;
  // Assert tests in two processes: one test process per worker serves test after test
  // (it never runs candidate code; its state is put back between tests, and it is
  // replaced after a test that did not end normally). false: a fresh test process per
  // test, as before issue 22 (for the benchmark's comparison).
  bool reuse_test_process = true;
};

struct TestResult {
  sandbox::Verdict verdict;
  std::string stdout_data;  // what the program printed (bounded by limits.output_bytes)
  std::string stderr_data;
  // kNative: the recorded execution (null otherwise, or when the child produced none).
  std::shared_ptr<const proto::Trace> trace;
  // An assert test in two processes whose failure was traced by its own candidate
  // process, replaying the graded run's calls into a fresh run of the program (not in a
  // second pair of processes): RunOptions::retrace_failures, docs/executor.md.
  bool trace_replayed = false;
  // kPythonSettrace: number of f_locals snapshots the baseline hook took.
  uint64_t settrace_snapshots = 0;
  // How the child process ended (for diagnostics; the verdict already accounts for it).
  sandbox::Termination termination = sandbox::Termination::kExited;
  int exit_code = 0;
};

struct ProgramResult {
  std::vector<TestResult> tests;  // in test order; fewer than total when stopped early
  int passed = 0;
  int total = 0;  // number of tests given
  // R_hat: passed / total (0 when there are no tests).
  double pass_fraction() const { return total == 0 ? 0.0 : double(passed) / total; }
  bool all_passed() const { return total > 0 && passed == total; }
};

// Modules imported in the warm interpreter so children do not pay for them.
std::vector<std::string> DefaultPreloadModules();

// How an executor's fork server process comes to be.
enum class ServerStart {
  // The program egca-py-server, started with posix_spawn: its children hold nothing of
  // the caller's memory, and a run costs the same whatever the caller holds.
  kExec,
  // A fork of the calling process: every child inherits the caller's address space as it
  // was at Create() (expected answers, a loaded model) and each run's fork and exit pay
  // for its page tables. For comparisons (bench/caller_memory) and hosts without the
  // server program.
  kFork,
};

struct ExecutorOptions {
  std::string scratch_root = "/tmp/egca-sandbox";  // children's private directories
  bool install_seccomp = true;                     // off only to debug egca itself
  std::vector<std::string> preload_modules = DefaultPreloadModules();
  ServerStart server_start = ServerStart::kExec;
  // kExec: the server program to run. Empty: found as tracer/src/server_binary.h says
  // ($EGCA_SERVER_DIR, next to the executable or the library, the build tree, the install
  // prefix); Create() fails naming every path tried when there is none.
  std::string server_binary;
};

class Executor {
 public:
  // Starts the fork server and warms the interpreter (~50 ms). Errors: the server could
  // not start or the interpreter failed to initialize.
  static StatusOr<std::unique_ptr<Executor>> Create(const ExecutorOptions& options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs `source` (UTF-8 Python) on one test in a fresh sandboxed child.
  StatusOr<TestResult> Run(std::string_view source, const TestCase& test,
                           const RunOptions& options);

  // Runs `source` on every test (one child each). A program that does not compile gets
  // SYNTAX_ERROR on every test without further runs.
  StatusOr<ProgramResult> RunAll(std::string_view source, const std::vector<TestCase>& tests,
                                 const RunOptions& options);

 private:
  class Impl;
  explicit Executor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One program and its tests, for ExecutorPool::RunBatch.
struct ProgramJob {
  std::string source;
  std::vector<TestCase> tests;
};

// `workers` Executors (one fork server each) driven by as many threads: programs are
// handed out in order to whichever worker is free. With ServerStart::kFork, create it
// before the process starts threads of its own (each server is then a fork of the
// caller).
class ExecutorPool {
 public:
  static StatusOr<std::unique_ptr<ExecutorPool>> Create(const ExecutorOptions& options,
                                                        int workers);
  ~ExecutorPool();
  ExecutorPool(const ExecutorPool&) = delete;
  ExecutorPool& operator=(const ExecutorPool&) = delete;

  int workers() const { return static_cast<int>(executors_.size()); }

  // Runs every job (RunAll semantics); results in job order. One job's error does not
  // stop the others. Blocks until all are done; one RunBatch at a time.
  std::vector<StatusOr<ProgramResult>> RunBatch(const std::vector<ProgramJob>& jobs,
                                                const RunOptions& options);

 private:
  explicit ExecutorPool(std::vector<std::unique_ptr<Executor>> executors);
  std::vector<std::unique_ptr<Executor>> executors_;
};

}  // namespace egca::tracer
