// Constraints in the router, through the real executor: correct real programs (CodeT samples
// that pass HumanEval's check()) that violate a constraint are routed to CONSTRAINT with
// R = R_hat * I_C = 0 and the violation's span; under the default extracted constraints a
// correct alternative stays CORRECT.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "common/shared_executor.h"
#include "egca/core/files.h"
#include "egca/gates/constraints.h"
#include "egca/gates/router.h"

namespace egca::gates {
namespace {

const std::string kFixtures = std::string(EGCA_SOURCE_DIR) + "/tests/fixtures/constraints/";

std::string Cut(std::string_view source, const SourceSpan& s) {
  return std::string(source.substr(s.begin_byte, s.end_byte - s.begin_byte));
}

struct HumanEvalTask {
  std::string prompt;
  Problem problem;
};

HumanEvalTask LoadTask(const std::string& id) {
  auto text = ReadMaybeGzipFile(std::string(EGCA_DATA_DIR) + "/humaneval/HumanEval.jsonl.gz");
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  std::istringstream in(text.ok() ? *text : "");
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j["task_id"] != id) continue;
    HumanEvalTask t;
    t.prompt = j["prompt"];
    t.problem.reference = t.prompt + j["canonical_solution"].get<std::string>();
    t.problem.tests = {tracer::TestCase::HumanEvalCheck(j["test"], j["entry_point"])};
    return t;
  }
  ADD_FAILURE() << id << " not found";
  return {};
}

std::string Fixture(const std::string& name) {
  auto text = ReadFile(kFixtures + name);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

class ConstraintsRouterE2E : public egca::testing::SharedExecutorTest {
 protected:
  static RouterOptions Options() {
    RouterOptions o;
    o.run.limits.wall_seconds = 5;
    o.run.limits.cpu_seconds = 5;
    return o;
  }
};


TEST_F(ConstraintsRouterE2E, TeacherFileRoutesNestedLoopsToConstraint) {
  HumanEvalTask task = LoadTask("HumanEval/0");
  auto file = ReadConstraintsFile(kFixtures + "teacher_humaneval.json");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto set = MakeConstraintSet(file->at("HumanEval/0"));
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  task.problem.constraints = *set;

  const std::string cand = Fixture("humaneval0_codet_sample0.py");
  Router router(executor_, Options());
  auto r = router.Route(cand, task.problem);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->mode, FailureMode::kConstraint) << DumpRoute(*r);
  EXPECT_DOUBLE_EQ(r->pass_fraction, 1.0);  // correct, but I_C = 0
  EXPECT_FALSE(r->constraints_satisfied);
  EXPECT_DOUBLE_EQ(r->reward, 0.0);
  ASSERT_EQ(r->constraint_violations.size(), 2u) << DumpRoute(*r);
  const ConstraintViolation& depth = r->constraint_violations[0];
  EXPECT_EQ(depth.constraint, "max_loop_depth(1)");
  ASSERT_TRUE(depth.span.has_value());
  EXPECT_EQ(Cut(cand, *depth.span), "for j in range(len(numbers)):");
  EXPECT_EQ(depth.span->begin.line, 9);
  EXPECT_EQ(depth.span->begin.column, 8);
  EXPECT_EQ(r->constraint_violations[1].constraint, "requires_sorting");
  EXPECT_FALSE(r->constraint_violations[1].span.has_value());
  EXPECT_EQ(r->reason.rfind("violates max_loop_depth(1): for loop nested 2 deep", 0), 0u)
      << r->reason;
}

TEST_F(ConstraintsRouterE2E, ExtractedConstraintsKeepACorrectAlternativeCorrect) {
  HumanEvalTask task = LoadTask("HumanEval/0");
  auto specs = ExtractConstraints(task.problem.reference, {}, task.prompt);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  auto set = MakeConstraintSet(*specs);
  ASSERT_TRUE(set.ok());
  task.problem.constraints = *set;
  Router router(executor_, Options());
  auto r = router.Route(Fixture("humaneval0_codet_sample0.py"), task.problem);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->constraints_satisfied) << DumpRoute(*r);
  EXPECT_EQ(r->mode, FailureMode::kCorrect) << DumpRoute(*r);
  EXPECT_DOUBLE_EQ(r->reward, 1.0);
}

TEST_F(ConstraintsRouterE2E, ProblemThatForbidsRecursionRejectsARecursiveSolution) {
  HumanEvalTask task = LoadTask("HumanEval/46");
  auto specs = ExtractConstraints(task.problem.reference, {}, task.prompt);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->front().ToString(), "forbids_recursion");
  auto set = MakeConstraintSet(*specs);
  ASSERT_TRUE(set.ok());
  task.problem.constraints = *set;

  const std::string cand = Fixture("humaneval46_codet_sample17.py");
  Router router(executor_, Options());
  auto r = router.Route(cand, task.problem);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->mode, FailureMode::kConstraint) << DumpRoute(*r);
  EXPECT_DOUBLE_EQ(r->pass_fraction, 1.0);
  ASSERT_EQ(r->constraint_violations.size(), 1u) << DumpRoute(*r);
  const ConstraintViolation& v = r->constraint_violations[0];
  EXPECT_EQ(v.constraint, "forbids_recursion");
  EXPECT_EQ(v.message, "fib4 calls itself");
  ASSERT_TRUE(v.span.has_value());
  EXPECT_EQ(Cut(cand, *v.span), "fib4(n-1)");
  EXPECT_EQ(v.span->begin.line, 23);
  EXPECT_EQ(v.span->begin.column, 15);
  // The canonical solution itself satisfies the same set.
  auto ref = router.Route(task.problem.reference, task.problem);
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->mode, FailureMode::kCorrect) << DumpRoute(*ref);
}

}  // namespace
}  // namespace egca::gates
