// The failure-mode router through the real executor: eq. 5's priority order, R_hat and R,
// the run-time-error option, constraints, the reference-trace cache, timeouts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/shared_executor.h"
#include "egca/gates/router.h"
#include "gates/lis_problem.h"

namespace egca::gates {
namespace {

using egca::testing::LisProblem;
using egca::testing::LisProgram;


std::string Cut(std::string_view source, const SourceSpan& s) {
  return std::string(source.substr(s.begin_byte, s.end_byte - s.begin_byte));
}

class RouterE2E : public egca::testing::SharedExecutorTest {
 protected:
  static RouterOptions Options() {
    RouterOptions o;
    o.run.limits.wall_seconds = 2;
    o.run.limits.cpu_seconds = 2;
    return o;
  }
};


TEST_F(RouterE2E, CaseStudyIsLogicWithTheComparisonSpan) {
  Router router(executor_, Options());
  const std::string cand = LisProgram("lis_buggy.py");
  auto r = router.Route(cand, LisProblem());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->mode, FailureMode::kLogic) << DumpRoute(*r);
  EXPECT_EQ(r->first_failing_test, 1);
  EXPECT_NEAR(r->pass_fraction, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(r->reward, 2.0 / 3.0, 1e-12);
  ASSERT_TRUE(r->earliest_divergence.has_value()) << DumpRoute(*r);
  EXPECT_NE(Cut(cand, *r->earliest_divergence).find(">="), std::string::npos);
  const diff::Divergence& d = *r->divergence->earliest;
  std::map<std::string, std::string> ctx(d.context.begin(), d.context.end());
  EXPECT_EQ(ctx["i"], "2");
  EXPECT_EQ(ctx["j"], "1");
  EXPECT_TRUE(r->last_divergence.has_value());
  EXPECT_TRUE(r->random_boundary.has_value());
}

TEST_F(RouterE2E, CorrectProgram) {
  Router router(executor_, Options());
  auto r = router.Route(LisProgram("lis_correct.py"), LisProblem());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mode, FailureMode::kCorrect) << DumpRoute(*r);
  EXPECT_EQ(r->reward, 1.0);
  EXPECT_FALSE(r->divergence.has_value());
}

TEST_F(RouterE2E, UnparseableIsSyntaxWithTheErrorSpan) {
  Router router(executor_, Options());
  std::string cand = "def longest_increasing_subsequence(nums)\n    return 0\n";
  auto r = router.Route(cand, LisProblem());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mode, FailureMode::kSyntax);
  ASSERT_TRUE(r->error_span.has_value());
  EXPECT_EQ(r->error_span->begin.line, 1);
}

TEST_F(RouterE2E, RunTimeErrorIsSyntaxByDefaultAndLogicOnRequest) {
  std::string cand =
      "def longest_increasing_subsequence(nums):\n"
      "    best = 1\n"
      "    for i in range(1, len(nums)):\n"
      "        best = max(best, nums[i] // (nums[i] - nums[i - 1]))\n"
      "    return best\n";
  Problem p = LisProblem();
  Router router(executor_, Options());
  auto r = router.Route(cand, p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mode, FailureMode::kSyntax) << DumpRoute(*r);
  ASSERT_TRUE(r->error_span.has_value());
  EXPECT_EQ(Cut(cand, *r->error_span), "best = max(best, nums[i] // (nums[i] - nums[i - 1]))");
  EXPECT_NE(r->error_message.find("ZeroDivisionError"), std::string::npos);

  RouterOptions o = Options();
  o.runtime_error_is_logic = true;
  o.check_comparability = false;
  Router lenient(executor_, o);
  auto l = lenient.Route(cand, p);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->mode, FailureMode::kLogic) << DumpRoute(*l);
}

class NoNestedLoops : public ConstraintChecker {
 public:
  std::string name() const override { return "no-nested-loops"; }
  std::optional<ConstraintViolation> Violation(std::string_view,
                                               const cfg::ProgramCfg& program) const override {
    for (const cfg::FunctionCfg& s : program.scopes()) {
      for (cfg::BlockId b = 0; b < s.block_count(); ++b) {
        if (s.block(b).loop_depth >= 2) return ConstraintViolation{name(), "a loop nested in a loop", {}};
      }
    }
    return std::nullopt;
  }
};

TEST_F(RouterE2E, ConstraintViolationZeroesTheReward) {
  Problem p = LisProblem();
  p.constraints.push_back(std::make_shared<NoNestedLoops>());
  Router router(executor_, Options());
  auto r = router.Route(LisProgram("lis_correct.py"), p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mode, FailureMode::kConstraint) << DumpRoute(*r);
  EXPECT_FALSE(r->constraints_satisfied);
  EXPECT_EQ(r->pass_fraction, 1.0);
  EXPECT_EQ(r->reward, 0.0);  // R = R_hat * I_C
  ASSERT_EQ(r->constraint_violations.size(), 1u);
  EXPECT_EQ(r->constraint_violations[0].constraint, "no-nested-loops");
  EXPECT_EQ(r->reason, "violates no-nested-loops: a loop nested in a loop");
}

TEST_F(RouterE2E, IncomparableStructureIsConstraint) {
  RouterOptions o = Options();
  o.structure.threshold = 0.99;
  Router router(executor_, o);
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
      "    return len(tails)\n";
  auto r = router.Route(cand, LisProblem());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->comparability.has_value());
  EXPECT_LT(r->comparability->score, 0.99);
  EXPECT_EQ(r->mode, FailureMode::kConstraint) << DumpRoute(*r);
  EXPECT_EQ(r->reward, 1.0);  // all tests pass; I_C = 1: only I_cmp failed
}

TEST_F(RouterE2E, ReferenceTraceIsComputedOncePerTest) {
  auto cache = std::make_shared<ReferenceCache>();
  Router router(executor_, Options(), cache);
  std::string buggy = LisProgram("lis_buggy.py");
  ASSERT_TRUE(router.Route(buggy, LisProblem()).ok());
  std::string other = buggy;  // the same bug with `dp` renamed: fails the same first test
  for (size_t at; (at = other.find("dp")) != std::string::npos;) other.replace(at, 2, "best");
  const size_t computed = cache->trace_misses();
  EXPECT_EQ(computed, 1u);  // the failing test's, at one event cap
  auto r = router.Route(other, LisProblem());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mode, FailureMode::kLogic);
  EXPECT_EQ(cache->trace_misses(), computed);
  EXPECT_EQ(cache->trace_hits(), 1u);
}

// QuixBugs bitcount: `n ^= n - 1` never terminates. A timeout is LOGIC, localized from
// the bounded trace of the first test.
TEST_F(RouterE2E, TimeoutIsLogicLocalizedFromABoundedTrace) {
  std::ifstream in(std::filesystem::path(EGCA_DATA_DIR) / "quixbugs/quixbugs_python.jsonl");
  std::string line;
  nlohmann::json rec;
  while (std::getline(in, line)) {
    rec = nlohmann::json::parse(line);
    if (rec["name"] == "bitcount") break;
  }
  ASSERT_EQ(rec["name"], "bitcount");
  Problem p;
  p.reference = rec["solution"];
  p.tests = tracer::TestsFromScript(rec["tests"], "");
  p.tests.resize(2);
  RouterOptions o = Options();
  o.run.limits.wall_seconds = 1;
  o.run.limits.cpu_seconds = 1;
  Router router(executor_, o);
  std::string cand = rec["buggy_program"];
  auto r = router.Route(cand, p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mode, FailureMode::kLogic) << DumpRoute(*r);
  EXPECT_EQ(r->grading.tests[0].verdict.kind, sandbox::VerdictKind::kTimeout);
  ASSERT_TRUE(r->earliest_divergence.has_value()) << DumpRoute(*r);
  EXPECT_EQ(Cut(cand, *r->earliest_divergence), "n ^= n - 1");
}

// A stdin program (APPS style) that loops forever once it goes wrong: its bounded trace is
// taken too (the harness stops it after bounded_trace_seconds, whatever the test kind).
TEST_F(RouterE2E, StdinTimeoutIsLocalizedFromABoundedTrace) {
  Problem p;
  p.reference =
      "n = int(input())\n"
      "total = 0\n"
      "i = 1\n"
      "while i <= n:\n"
      "    total += i\n"
      "    i += 1\n"
      "print(total)\n";
  p.tests = {tracer::TestCase::Stdio("4\n", "10\n")};
  const std::string cand =
      "n = int(input())\n"
      "total = 0\n"
      "i = 1\n"
      "while i <= n:\n"
      "    total += i\n"
      "    i *= 1\n"
      "print(total)\n";
  RouterOptions o = Options();
  o.run.limits.wall_seconds = 1;
  o.run.limits.cpu_seconds = 1;
  auto r = Router(executor_, o).Route(cand, p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mode, FailureMode::kLogic) << DumpRoute(*r);
  EXPECT_EQ(r->grading.tests[0].verdict.kind, sandbox::VerdictKind::kTimeout);
  ASSERT_TRUE(r->candidate_trace != nullptr);
  EXPECT_TRUE(r->candidate_trace->truncated());
  ASSERT_TRUE(r->earliest_divergence.has_value()) << DumpRoute(*r);
  // The loop body's block: the first step whose state differs (i stays 1).
  EXPECT_NE(Cut(cand, *r->earliest_divergence).find("i *= 1"), std::string::npos)
      << Cut(cand, *r->earliest_divergence);
}

}  // namespace
}  // namespace egca::gates
