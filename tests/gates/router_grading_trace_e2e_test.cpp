// Tracing during grading (RouterOptions::grading_trace) and trimmed reference traces must
// not change a route: the same mode and spans as the traced re-run, on the EGCA case study
// and QuixBugs programs; a verdict never changes because a test ran traced.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "common/heavy_to_trace.h"
#include "common/shared_executor.h"
#include "egca/gates/router.h"
#include "egca/tracer/trace.pb.h"
#include "gates/lis_problem.h"

namespace egca::gates {
namespace {

using egca::testing::kHeavyToTrace;
using egca::testing::LisProblem;
using egca::testing::LisProgram;



std::string SpanText(const std::optional<SourceSpan>& s) { return s ? s->ToString() : "-"; }

class RouterGradingTrace : public egca::testing::SharedExecutorTest {
 protected:
  static RouterOptions Options(GradingTrace policy) {
    RouterOptions o;
    o.run.limits.wall_seconds = 2;
    o.run.limits.cpu_seconds = 2;
    o.grading_trace = policy;
    return o;
  }
  // The same route: mode, verdicts, spans and the whole dump (steps, alignment).
  static void ExpectSameRoute(const RouteResult& a, const RouteResult& b, const std::string& what) {
    EXPECT_EQ(a.mode, b.mode) << what;
    EXPECT_EQ(a.first_failing_test, b.first_failing_test) << what;
    ASSERT_EQ(a.grading.tests.size(), b.grading.tests.size()) << what;
    for (size_t i = 0; i < a.grading.tests.size(); ++i) {
      EXPECT_EQ(a.grading.tests[i].verdict.kind, b.grading.tests[i].verdict.kind) << what << i;
    }
    EXPECT_EQ(SpanText(a.earliest_divergence), SpanText(b.earliest_divergence)) << what;
    EXPECT_EQ(SpanText(a.last_divergence), SpanText(b.last_divergence)) << what;
    EXPECT_EQ(SpanText(a.random_boundary), SpanText(b.random_boundary)) << what;
    EXPECT_EQ(SpanText(a.error_span), SpanText(b.error_span)) << what;
    EXPECT_EQ(DumpRoute(a), DumpRoute(b)) << what;
  }
};


TEST(GradingTraceName, RoundTrips) {
  for (GradingTrace p : {GradingTrace::kNever, GradingTrace::kAlways, GradingTrace::kAuto}) {
    GradingTrace back = GradingTrace::kNever;
    ASSERT_TRUE(ParseGradingTrace(GradingTraceName(p), &back));
    EXPECT_EQ(back, p);
  }
  GradingTrace unused;
  EXPECT_FALSE(ParseGradingTrace("sometimes", &unused));
}

TEST_F(RouterGradingTrace, ExecutorShipsOnlyAFailingTestsTrace) {
  tracer::RunOptions run;
  run.trace_mode = tracer::TraceMode::kNative;
  run.trace.enabled = true;
  run.trace_failures_only = true;
  const std::string src = "def add(a, b):\n    return a + b\n";
  auto pass = executor_->Run(src, tracer::TestCase::Call("add", "[1, 2]", "3"), run);
  ASSERT_TRUE(pass.ok());
  EXPECT_TRUE(pass->verdict.passed());
  EXPECT_EQ(pass->trace, nullptr);
  auto fail = executor_->Run(src, tracer::TestCase::Call("add", "[1, 2]", "4"), run);
  ASSERT_TRUE(fail.ok());
  EXPECT_EQ(fail->verdict.kind, sandbox::VerdictKind::kWrongAnswer);
  ASSERT_NE(fail->trace, nullptr);
  EXPECT_GT(fail->trace->events_size(), 0);
}

TEST_F(RouterGradingTrace, CaseStudyInlineEqualsReRun) {
  const std::string cand = LisProgram("lis_buggy.py");
  Router rerun(executor_, Options(GradingTrace::kNever));
  Router inline_traced(executor_, Options(GradingTrace::kAuto));
  auto a = rerun.Route(cand, LisProblem());
  auto b = inline_traced.Route(cand, LisProblem());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->mode, FailureMode::kLogic) << DumpRoute(*a);
  ASSERT_TRUE(a->earliest_divergence.has_value());
  EXPECT_FALSE(a->trace_from_grading);
  EXPECT_EQ(a->grading_traced_tests, 0);
  EXPECT_TRUE(b->trace_from_grading);
  EXPECT_EQ(b->grading_traced_tests, 2);  // up to and including the first failing test
  EXPECT_EQ(b->candidate_trace_seconds, 0.0);
  ExpectSameRoute(*a, *b, "lis_buggy");
}

TEST_F(RouterGradingTrace, TrimmedReferenceFindsTheSameDivergence) {
  const std::string cand = LisProgram("lis_buggy.py");
  RouterOptions full = Options(GradingTrace::kAuto);
  full.trim_reference_trace = false;
  RouterOptions trimmed = Options(GradingTrace::kAuto);
  trimmed.reference_first_cap = 8;  // far fewer than the reference's events
  auto a = Router(executor_, full).Route(cand, LisProblem());
  auto b = Router(executor_, trimmed).Route(cand, LisProblem());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(b->reference_trace != nullptr);
  EXPECT_FALSE(a->reference_trace->truncated());
  EXPECT_EQ(SpanText(a->earliest_divergence), SpanText(b->earliest_divergence));
  ASSERT_TRUE(b->divergence.has_value());
  EXPECT_EQ(b->divergence->earliest->kind, a->divergence->earliest->kind);
}

// A long input: both whole traces are ~90k events, the candidate diverges in its first
// steps. With the reference prepared (its first 4096 events), the trimmed route retraces
// the candidate only up to 4 x 4096 + 1024 events, traces the reference up to the level
// covering twice that, and finds the same earliest divergence as the full route.
TEST_F(RouterGradingTrace, LongReferenceIsTracedAndAlignedOnlyAsFarAsNeeded) {
  const std::string cand = LisProgram("lis_buggy.py");
  std::string nums = "[1, 3, 3, 5";
  for (int i = 10; i < 250; ++i) nums += ", " + std::to_string(i);
  nums += "]";
  Problem p;
  p.reference = LisProgram("lis_correct.py");
  p.tests = {tracer::TestCase::Call("longest_increasing_subsequence", "[" + nums + "]", "243")};
  RouterOptions full = Options(GradingTrace::kAuto);
  full.trim_reference_trace = false;
  full.trace.max_events = 10000000;
  full.trace.max_bytes = 1ull << 40;
  full.grading_trace_min_seconds = 10;
  RouterOptions trimmed = full;
  trimmed.trim_reference_trace = true;
  auto a = Router(executor_, full).Route(cand, p);
  Router trimmed_router(executor_, trimmed);
  ASSERT_TRUE(trimmed_router.PrepareReference(p).ok());
  auto b = trimmed_router.Route(cand, p);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->mode, FailureMode::kLogic) << DumpRoute(*a);
  ASSERT_TRUE(a->reference_trace && b->reference_trace && b->candidate_trace);
  EXPECT_FALSE(a->reference_trace->truncated());
  EXPECT_GT(a->reference_trace->events_size(), 80000);
  EXPECT_TRUE(b->trace_from_grading);
  EXPECT_EQ(b->candidate_trace->events_size(), 4 * 4096 + 1024);
  EXPECT_TRUE(b->reference_trace->truncated());
  EXPECT_EQ(b->reference_trace->events_size(), 4096 * 16);
  ASSERT_TRUE(a->earliest_divergence.has_value());
  EXPECT_EQ(SpanText(a->earliest_divergence), SpanText(b->earliest_divergence));
  ASSERT_TRUE(a->divergence && b->divergence);
  EXPECT_EQ(b->divergence->earliest->kind, a->divergence->earliest->kind);
}

// QuixBugs programs (buggy vs fixed, the asserts as tests), kNever against kAlways: every
// route the same, LOGIC localized from grading's trace without a re-run.
TEST_F(RouterGradingTrace, QuixBugsInlineEqualsReRun) {
  std::ifstream in(std::filesystem::path(EGCA_DATA_DIR) / "quixbugs/quixbugs_python.jsonl");
  ASSERT_TRUE(in.good());
  int compared = 0, from_grading = 0;
  for (std::string line; std::getline(in, line) && compared < 12;) {
    auto rec = nlohmann::json::parse(line);
    // Programs whose buggy version terminates on its tests (the others time out and are
    // covered by the timeout tests).
    static const std::set<std::string> kNames = {
        "bucketsort", "flatten",     "get_factors", "hanoi",     "is_valid_parenthesization",
        "kheapsort",  "knapsack",    "lis",         "powerset",  "quicksort",
        "to_base",    "next_palindrome"};
    if (!kNames.count(rec["name"])) continue;
    Problem p;
    p.reference = rec["solution"];
    p.tests = tracer::TestsFromScript(rec["tests"], "");
    const std::string cand = rec["buggy_program"];
    auto a = Router(executor_, Options(GradingTrace::kNever)).Route(cand, p);
    auto b = Router(executor_, Options(GradingTrace::kAlways)).Route(cand, p);
    RouterOptions in_run = Options(GradingTrace::kAlways);
    in_run.grading_retrace = false;
    auto c = Router(executor_, in_run).Route(cand, p);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << rec["name"];
    ExpectSameRoute(*a, *b, rec["name"]);
    ExpectSameRoute(*a, *c, rec["name"]);
    if (b->mode == FailureMode::kLogic) {
      EXPECT_TRUE(a->earliest_divergence.has_value()) << rec["name"];
      from_grading += b->trace_from_grading;
    }
    ++compared;
  }
  EXPECT_EQ(compared, 12);
  EXPECT_GE(from_grading, 10);
}

// Passes untraced in well under the limit, but tracing (a 1000-element list mutated and
// rehashed at every line, no event cap) makes it far slower than the limit: the traced run times out,
// the untraced re-run passes, and the pass is what counts.
TEST_F(RouterGradingTrace, TracedTimeoutKeepsTheUntracedVerdict) {
  const std::string src = kHeavyToTrace;
  Problem p;
  p.reference = src;
  p.tests = {tracer::TestCase::Call("f", "[1000000]", "499000500000")};
  RouterOptions o = Options(GradingTrace::kAlways);
  // Untraced: ~0.1-0.3 s CPU, far below the limit even on a machine 5x slower under load;
  // traced: 3M events, each rehashing a 1000-element list: minutes on any machine.
  o.run.limits.cpu_seconds = 5;
  o.run.limits.wall_seconds = 10;
  o.trace.max_events = 100000000;
  o.trace.max_bytes = 1ull << 40;
  o.grading_trace_min_seconds = 100;  // the traced run gets the test's full limit
  o.grading_retrace = false;           // the graded run itself is traced
  auto r = Router(executor_, o).Route(src, p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->grading_traced_tests, 1);
  EXPECT_EQ(r->grading_retried_tests, 1);
  EXPECT_EQ(r->grading.tests[0].verdict.kind, sandbox::VerdictKind::kOk) << DumpRoute(*r);
  EXPECT_EQ(r->mode, FailureMode::kCorrect);
}

// Retrace (the default): the graded run is untraced and a passing test is never run
// traced, so a test that is heavy to trace costs nothing extra and needs no retry.
TEST_F(RouterGradingTrace, RetracePassingHeavyTestIsNotTraced) {
  const std::string src = kHeavyToTrace;
  Problem p;
  p.reference = src;
  p.tests = {tracer::TestCase::Call("f", "[1000000]", "499000500000")};
  RouterOptions o = Options(GradingTrace::kAlways);
  o.run.limits.cpu_seconds = 5;  // as above
  o.run.limits.wall_seconds = 10;
  o.trace.max_events = 100000000;
  o.trace.max_bytes = 1ull << 40;
  o.grading_trace_min_seconds = 100;
  auto r = Router(executor_, o).Route(src, p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->grading_traced_tests, 1);
  EXPECT_EQ(r->grading_retried_tests, 0);
  EXPECT_EQ(r->grading.tests[0].verdict.kind, sandbox::VerdictKind::kOk) << DumpRoute(*r);
  EXPECT_EQ(r->mode, FailureMode::kCorrect);
}

// The executor with retrace_failures: the verdict is the untraced run's, a passing run
// ships no trace, a failing one ships the trace of its traced second run.
TEST_F(RouterGradingTrace, ExecutorRetracesOnlyFailures) {
  tracer::RunOptions run;
  run.trace_mode = tracer::TraceMode::kNative;
  run.retrace_failures = true;
  const char* f = "longest_increasing_subsequence";
  auto pass = executor_->Run(LisProgram("lis_buggy.py"),
                             tracer::TestCase::Call(f, "[[10, 9, 2, 5, 3, 7, 101, 18]]", "4"), run);
  auto fail = executor_->Run(LisProgram("lis_buggy.py"), tracer::TestCase::Call(f, "[[1, 3, 3, 5]]", "3"),
                             run);
  ASSERT_TRUE(pass.ok() && fail.ok());
  EXPECT_TRUE(pass->verdict.passed());
  EXPECT_EQ(pass->trace, nullptr);
  EXPECT_EQ(fail->verdict.kind, sandbox::VerdictKind::kWrongAnswer);
  ASSERT_NE(fail->trace, nullptr);
  tracer::RunOptions inline_run = run;
  inline_run.retrace_failures = false;
  auto direct = executor_->Run(LisProgram("lis_buggy.py"),
                               tracer::TestCase::Call(f, "[[1, 3, 3, 5]]", "3"), inline_run);
  ASSERT_TRUE(direct.ok() && direct->trace != nullptr);
  EXPECT_EQ(fail->trace->events_size(), direct->trace->events_size());
  EXPECT_GT(fail->trace->events_size(), 0);
}

// kAuto: the traced run blows its default budget (grading_trace_min_seconds) where the
// untraced run is fast, so the test is marked heavy and later candidates grade it untraced.
TEST_F(RouterGradingTrace, AutoLearnsAHeavyTest) {
  const std::string src = kHeavyToTrace;
  Problem p;
  p.reference = src;
  p.tests = {tracer::TestCase::Call("f", "[400000]", "79600800000")};
  RouterOptions o = Options(GradingTrace::kAuto);
  o.trace.max_events = 100000000;
  o.trace.max_bytes = 1ull << 40;
  o.grading_trace_min_seconds = 0.5;  // traced: ~1.2M events, seconds; untraced: ~0.1 s
  o.grading_trace_slowdown = 2;
  o.grading_retrace = false;  // the graded run itself is traced
  Router router(executor_, o);
  auto first = router.Route(src, p);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->mode, FailureMode::kCorrect) << DumpRoute(*first);
  EXPECT_EQ(first->grading_traced_tests, 1);
  EXPECT_EQ(first->grading_retried_tests, 1);
  auto second = router.Route(src, p);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->mode, FailureMode::kCorrect);
  EXPECT_EQ(second->grading_traced_tests, 0);
}

// Tracing the graded run itself (grading_retrace off): a reference trace longer than
// grading_trace_max_events makes the test heavy for kAuto, grading runs it untraced and the
// LOGIC sample is localized from a re-run.
TEST_F(RouterGradingTrace, AutoGradesAHeavyTestUntraced) {
  const std::string cand = LisProgram("lis_buggy.py");
  RouterOptions o = Options(GradingTrace::kAuto);
  o.grading_trace_max_events = 8;
  o.grading_retrace = false;
  Router router(executor_, o);
  ASSERT_TRUE(router.PrepareReference(LisProblem()).ok());
  auto r = router.Route(cand, LisProblem());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->grading_traced_tests, 0);
  EXPECT_FALSE(r->trace_from_grading);
  auto rerun = Router(executor_, Options(GradingTrace::kNever)).Route(cand, LisProblem());
  ASSERT_TRUE(rerun.ok());
  EXPECT_EQ(SpanText(r->earliest_divergence), SpanText(rerun->earliest_divergence));
}

// Retracing in the child (the default) costs a passing test nothing, so kAuto retraces a
// heavy test too, with the retrace's event cap from the reference's trace.
TEST_F(RouterGradingTrace, RetraceCoversAHeavyTest) {
  const std::string cand = LisProgram("lis_buggy.py");
  RouterOptions o = Options(GradingTrace::kAuto);
  o.grading_trace_max_events = 8;
  Router router(executor_, o);
  ASSERT_TRUE(router.PrepareReference(LisProblem()).ok());
  auto r = router.Route(cand, LisProblem());
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->grading_traced_tests, 0);
  EXPECT_TRUE(r->trace_from_grading);
  auto rerun = Router(executor_, Options(GradingTrace::kNever)).Route(cand, LisProblem());
  ASSERT_TRUE(rerun.ok());
  ExpectSameRoute(*r, *rerun, "retraced heavy test");
}

// A CONSTRAINT sample (not comparable) is never traced: it cannot be LOGIC.
TEST_F(RouterGradingTrace, ConstraintSamplesAreGradedUntraced) {
  RouterOptions o = Options(GradingTrace::kAlways);
  o.structure.threshold = 0.99;
  std::string cand =
      "def longest_increasing_subsequence(nums):\n"
      "    import bisect\n"
      "    tails = []\n"
      "    for x in nums:\n"
      "        k = bisect.bisect_left(tails, x)\n"
      "        if k == len(tails):\n"
      "            tails.append(x)\n"
      "        else:\n"
      "            tails[k] = x\n"
      "    return len(tails) + 1\n";
  auto r = Router(executor_, o).Route(cand, LisProblem());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mode, FailureMode::kConstraint) << DumpRoute(*r);
  EXPECT_EQ(r->grading_traced_tests, 0);
}

}  // namespace
}  // namespace egca::gates
