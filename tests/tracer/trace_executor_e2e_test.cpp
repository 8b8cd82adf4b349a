// The trace hook through the real path: Executor -> fork server -> sandboxed child ->
// harness -> _egca_trace -> serialized trace back in the parent.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/heavy_to_trace.h"
#include "egca/tracer/executor.h"
#include "egca/tracer/trace.pb.h"
#include "egca/tracer/trace_dump.h"

namespace egca::tracer {
namespace {

using egca::testing::kHeavyToTrace;

std::string Golden(const std::string& name) {
  std::ifstream in(std::filesystem::path(EGCA_SOURCE_DIR) / "tests/tracer/golden" / name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The golden LIS programs end with a module-level call; the executor calls the function
// itself, so drop that line.
std::string LisProgram(const std::string& name) {
  std::string src = Golden(name);
  return src.substr(0, src.find("\n\nresult = ")) + "\n";
}

class TraceExecutorE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto created = Executor::Create({});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    executor_ = std::move(created).value().release();
  }
  static void TearDownTestSuite() {
    delete executor_;
    executor_ = nullptr;
  }
  static TestResult Run(const std::string& source, const TestCase& test,
                        TraceOptions trace = TraceOptions()) {
    RunOptions options;
    options.limits.wall_seconds = 10;
    options.limits.cpu_seconds = 10;
    options.trace_mode = TraceMode::kNative;
    trace.enabled = true;
    options.trace = trace;
    StatusOr<TestResult> result = executor_->Run(source, test, options);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? std::move(result).value() : TestResult{};
  }
  // Native tracing with retrace_failures, no event or byte cap, `seconds` of limits.
  static RunOptions UncappedRetrace(double seconds) {
    RunOptions options;
    options.limits.wall_seconds = seconds;
    options.limits.cpu_seconds = seconds;
    options.trace_mode = TraceMode::kNative;
    options.trace.enabled = true;
    options.trace.max_events = 100000000;
    options.trace.max_bytes = 1ull << 40;
    options.retrace_failures = true;
    return options;
  }
  static Executor* executor_;
};

Executor* TraceExecutorE2E::executor_ = nullptr;

TEST_F(TraceExecutorE2E, PaperCaseStudyDivergesAtI2J1) {
  TestCase test = TestCase::Call("longest_increasing_subsequence", "[[1, 3, 3, 5]]", "3");
  TestResult buggy = Run(LisProgram("lis_buggy.py"), test);
  TestResult correct = Run(LisProgram("lis_correct.py"), test);
  ASSERT_NE(buggy.trace, nullptr) << buggy.stderr_data;
  ASSERT_NE(correct.trace, nullptr) << correct.stderr_data;
  EXPECT_FALSE(buggy.verdict.passed());
  EXPECT_TRUE(correct.verdict.passed()) << correct.verdict.message;
  std::string b = DumpTrace(*buggy.trace);
  std::string c = DumpTrace(*correct.trace);
  EXPECT_FALSE(buggy.trace->tracer_displaced());
  EXPECT_NE(b.find("nums=[1, 3, 3, 5]"), std::string::npos) << b;
  // After i=2, j=1 (3 >= 3) the buggy program sets dp[2] = 3; the correct one never does.
  EXPECT_NE(b.find("dp=[1, 2, 3, 1]"), std::string::npos) << b;
  EXPECT_EQ(c.find("dp=[1, 2, 3, 1]"), std::string::npos) << c;
  EXPECT_NE(b.find("-> 4"), std::string::npos);
  EXPECT_NE(c.find("-> 3"), std::string::npos);
  // Only the user's code is traced: no harness frames.
  for (const auto& code : buggy.trace->code()) {
    EXPECT_TRUE(code.qualname() == "<module>" ||
                code.qualname() == "longest_increasing_subsequence")
        << code.qualname();
  }
  EXPECT_EQ(buggy.trace->filename(), "<candidate>");
}

TEST_F(TraceExecutorE2E, LongLoopIsCappedAndRunsOnUntraced) {
  // 3 million iterations: ~6 million line events if traced to the end; the cap stops
  // tracing after 1000 events and the rest runs at full speed, well inside the limit.
  TraceOptions trace;
  trace.max_events = 1000;
  TestResult r = Run("def f():\n    n = 0\n    for i in range(3000000):\n        n += i\n"
                     "    return n\n",
                     TestCase::Call("f", "[]", "4499998500000"), trace);
  ASSERT_NE(r.trace, nullptr) << r.stderr_data;
  EXPECT_TRUE(r.verdict.passed()) << r.verdict.message;
  EXPECT_TRUE(r.trace->truncated());
  EXPECT_EQ(r.trace->truncation(), proto::MAX_EVENTS);
  EXPECT_EQ(r.trace->events_size(), 1000);
}

// stop_at_limit: at the cap the program is stopped, not run on. It catches the stop, but
// every handler's line raises it again, so it cannot keep running; the trace is the prefix.
TEST_F(TraceExecutorE2E, StopAtLimitStopsAProgramThatCatchesTheStop) {
  TraceOptions trace;
  trace.max_events = 200;
  trace.stop_at_limit = true;
  TestResult r = Run("def f():\n"
                     "    n = 0\n"
                     "    while True:\n"
                     "        try:\n"
                     "            while True:\n"
                     "                try:\n"
                     "                    n += 1\n"
                     "                except BaseException:\n"
                     "                    n -= 1\n"
                     "        except BaseException:\n"
                     "            n -= 1\n",
                     TestCase::Call("f", "[]", "0"), trace);
  ASSERT_NE(r.trace, nullptr) << r.stderr_data;
  EXPECT_EQ(r.verdict.kind, sandbox::VerdictKind::kRuntimeError) << r.verdict.message;
  EXPECT_EQ(r.verdict.error_type, "TraceStopped");
  EXPECT_TRUE(r.trace->truncated());
  EXPECT_EQ(r.trace->truncation(), proto::MAX_EVENTS);
  EXPECT_EQ(r.trace->events_size(), 200);
  EXPECT_TRUE(r.trace->options().stop_at_limit());
}

// trace_seconds: a failing test whose traced second run would take far longer than the
// budget is stopped at the budget; the verdict is the untraced run's, the trace a prefix.
TEST_F(TraceExecutorE2E, RetraceTimeBudgetStopsTheTracedRun) {
  // ~0.1 s untraced; traced to the end far beyond the 10 s limit.
  RunOptions options = UncappedRetrace(10);
  options.trace_seconds = 0.2;
  StatusOr<TestResult> r =
      executor_->Run(kHeavyToTrace, TestCase::Call("f", "[1000000]", "0"), options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->verdict.kind, sandbox::VerdictKind::kWrongAnswer) << r->verdict.message;
  ASSERT_NE(r->trace, nullptr) << r->stderr_data;
  EXPECT_TRUE(r->trace->truncated());
  EXPECT_EQ(r->trace->truncation(), proto::TIME_BUDGET);
  EXPECT_GT(r->trace->events_size(), 0);
  EXPECT_LT(r->trace->events_size(), 3000000);
}

// A retrace stopped by the test's limits (no budget of its own, no event cap, slow to
// trace) keeps the untraced run's verdict: the retrace is a second child, whose ending
// (here the CPU limit) only costs the trace.
TEST_F(TraceExecutorE2E, RetraceCutByALimitKeepsTheVerdict) {
  // Untraced ~0.1 s on a quiet machine (50x below the limit, so a machine 5x slower under
  // load still passes it); traced to the end it takes minutes anywhere (3M lines, each
  // rehashing a 1000-element list), so the traced run always meets the limit.
  RunOptions options = UncappedRetrace(10);
  options.limits.cpu_seconds = 5;
  StatusOr<TestResult> r =
      executor_->Run(kHeavyToTrace, TestCase::Call("f", "[1000000]", "0"), options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->verdict.kind, sandbox::VerdictKind::kWrongAnswer) << r->verdict.detail;
  EXPECT_EQ(r->trace, nullptr);
  EXPECT_EQ(r->termination, sandbox::Termination::kExited);  // the graded run's own ending
}

// A failure the child sees itself (a failing assert) is retraced in the same child after
// its record is written: the trace arrives with the verdict, and a retrace stopped by a
// limit keeps that verdict (the child ends by the limit, not by itself).
TEST_F(TraceExecutorE2E, VisibleFailureIsRetracedInTheSameChild) {
  RunOptions options = UncappedRetrace(3);
  // The in-child retrace is the one-process path's (assert tests in two processes are
  // retraced in a second pair: executor_assert_processes_e2e_test).
  options.assert_tests_in_one_process = true;
  StatusOr<TestResult> quick = executor_->Run(
      "def f(n):\n    return n + 1\n", TestCase::Asserts("assert f(1) == 3\n"), options);
  ASSERT_TRUE(quick.ok()) << quick.status().ToString();
  EXPECT_EQ(quick->verdict.kind, sandbox::VerdictKind::kRuntimeError);
  EXPECT_EQ(quick->verdict.error_type, "AssertionError");
  ASSERT_NE(quick->trace, nullptr);
  EXPECT_GT(quick->trace->events_size(), 0);
  options.limits.wall_seconds = 10;
  options.limits.cpu_seconds = 5;  // untraced ~0.1 s; traced to the end minutes (above)
  StatusOr<TestResult> cut = executor_->Run(
      kHeavyToTrace, TestCase::Asserts("assert f(1000000) == 0\n"), options);
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  EXPECT_EQ(cut->verdict.kind, sandbox::VerdictKind::kRuntimeError) << cut->verdict.detail;
  EXPECT_EQ(cut->trace, nullptr);
  EXPECT_NE(cut->termination, sandbox::Termination::kExited);  // stopped while retracing
}

// trace_budget_raises (the bounded trace of a timed-out test): the budget raises
// TimeoutError in the looping program, recorded in its trace; a program that swallows it
// is stopped 50 ms later all the same.
TEST_F(TraceExecutorE2E, TraceBudgetRaisesWhereTheProgramLoops) {
  RunOptions options;
  options.limits.wall_seconds = 5;
  options.limits.cpu_seconds = 5;
  options.trace_mode = TraceMode::kNative;
  options.trace.enabled = true;
  options.trace_seconds = 0.2;
  options.trace_budget_raises = true;
  auto loops = executor_->Run(
      "def f():\n    while True:\n        x = sum(range(10 ** 6))\n",
      TestCase::Call("f", "[]", "0"), options);
  ASSERT_TRUE(loops.ok()) << loops.status().ToString();
  EXPECT_EQ(loops->verdict.kind, sandbox::VerdictKind::kRuntimeError) << loops->verdict.detail;
  EXPECT_EQ(loops->verdict.error_type, "TimeoutError");
  ASSERT_NE(loops->trace, nullptr);
  bool recorded = false;
  for (const auto& e : loops->trace->events()) {
    recorded = recorded || (e.kind() == proto::EXCEPTION && e.exception().type() == "TimeoutError");
  }
  EXPECT_TRUE(recorded) << DumpTrace(*loops->trace);

  auto swallows = executor_->Run(
      "def f():\n    while True:\n        try:\n            x = sum(range(10 ** 6))\n"
      "        except TimeoutError:\n            pass\n",
      TestCase::Call("f", "[]", "0"), options);
  ASSERT_TRUE(swallows.ok()) << swallows.status().ToString();
  EXPECT_EQ(swallows->verdict.error_type, "TraceStopped") << swallows->verdict.detail;
  ASSERT_NE(swallows->trace, nullptr);
  EXPECT_EQ(swallows->trace->truncation(), proto::TIME_BUDGET);
}

TEST_F(TraceExecutorE2E, SettraceGamesAreReported) {
  TestResult r = Run("import sys\ndef f():\n    sys.settrace(None)\n    return 1\n",
                     TestCase::Call("f", "[]", "1"));
  ASSERT_NE(r.trace, nullptr) << r.stderr_data;
  EXPECT_TRUE(r.trace->tracer_displaced());
}

}  // namespace
}  // namespace egca::tracer
