// Alignment properties: renamed variables, reordered independent statements, extra
// prints, bounded (truncated / timed-out) candidate traces.
#include <gtest/gtest.h>

#include "diff_test_util.h"

namespace egca::diff {
namespace {

using testing::Diff;
using testing::ReadSource;
using testing::SpanText;

std::string Golden(const std::string& name) { return ReadSource("tests/diff/golden/" + name); }

TEST(DiffAlignment, RenamedVariablesAreMappedByValueHistory) {
  DivergenceReport r = Diff(Golden("renamed.cand.py"), Golden("renamed.ref.py"),
                            tracer::TestCase::Call("running_max", "[[1, 3, 2, 5, 4]]"));
  std::map<std::string, std::string> renamed;
  for (const VariableMapping& v : r.alignment.variables) {
    if (v.renamed) renamed[v.candidate] = v.reference;
  }
  EXPECT_EQ(renamed["top"], "best");
  EXPECT_EQ(renamed["result"], "out");
  EXPECT_EQ(renamed["x"], "v");
  EXPECT_FALSE(r.earliest.has_value()) << DumpReport(r);
}

TEST(DiffAlignment, RenamedVariableThatDivergesIsReportedWithBothNames) {
  std::string cand = Golden("renamed.cand.py");
  cand.replace(cand.find("top = x"), 7, "top = x + 1");
  DivergenceReport r = Diff(cand, Golden("renamed.ref.py"),
                            tracer::TestCase::Call("running_max", "[[1, 3, 2, 5, 4]]"));
  ASSERT_TRUE(r.earliest.has_value());
  ASSERT_FALSE(r.earliest->variables.empty());
  EXPECT_EQ(r.earliest->variables[0].candidate_name, "top");
  EXPECT_EQ(r.earliest->variables[0].reference_name, "best");
  EXPECT_EQ(r.earliest->variables[0].candidate_value, "4");
  EXPECT_EQ(r.earliest->variables[0].reference_value, "3");
  EXPECT_EQ(SpanText(cand, r.earliest->span), "top = x + 1");
}

TEST(DiffAlignment, ReorderedIndependentStatementsDoNotDiverge) {
  DivergenceReport r = Diff(Golden("reordered.cand.py"), Golden("reordered.ref.py"),
                            tracer::TestCase::Call("stats", "[[4, 5, 6]]"));
  EXPECT_FALSE(r.earliest.has_value()) << DumpReport(r);
  EXPECT_EQ(r.alignment.candidate_steps.size(), r.alignment.reference_steps.size());
}

TEST(DiffAlignment, ExtraPrintsAreIgnoredAndTheBugIsFound) {
  std::string cand = Golden("extra_print.cand.py");
  DivergenceReport r =
      Diff(cand, Golden("extra_print.ref.py"), tracer::TestCase::Call("fizz", "[4]"));
  ASSERT_TRUE(r.earliest.has_value());
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kValue);
  EXPECT_EQ(SpanText(cand, r.earliest->span), "out.append(str(i + 1))");
  // Without the bug, the prints alone do not diverge.
  cand.replace(cand.find("str(i + 1)"), 10, "str(i)");
  DivergenceReport clean =
      Diff(cand, Golden("extra_print.ref.py"), tracer::TestCase::Call("fizz", "[4]"));
  EXPECT_FALSE(clean.earliest.has_value()) << DumpReport(clean);
}

TEST(DiffAlignment, TruncatedCandidateTraceStillLocalizesAnEarlyDivergence) {
  const std::string ref =
      "def f(n):\n    s = 0\n    for i in range(n):\n        s += i\n    return s\n";
  const std::string cand =
      "def f(n):\n    s = 1\n    for i in range(n):\n        s += i\n    return s\n";
  auto test = tracer::TestCase::Call("f", "[5000]");
  auto c = PreparedProgram::Build(cand);
  auto rp = PreparedProgram::Build(ref);
  ASSERT_TRUE(c.ok() && rp.ok());
  auto ct = testing::Trace(cand, test, /*max_events=*/200);
  auto rt = testing::Trace(ref, test);
  ASSERT_TRUE(ct->truncated());
  DivergenceReport r = FindDivergence(*c.value(), *ct, *rp.value(), *rt);
  ASSERT_TRUE(r.earliest.has_value());
  EXPECT_EQ(SpanText(cand, r.earliest->span), "s = 1");
  EXPECT_TRUE(r.alignment.candidate_truncated);
  // A truncated trace with no divergence inside it is not blamed for ending early.
  auto same = testing::Trace(ref, test, 200);
  DivergenceReport none = FindDivergence(*rp.value(), *same, *rp.value(), *rt);
  EXPECT_FALSE(none.earliest.has_value()) << DumpReport(none);
}

// A runaway loop (here bounded at 10^6 iterations so the run ends; the executor returns
// no trace for a run killed by its time limit) is localized from the capped trace.
TEST(DiffAlignment, RunawayCandidateIsLocalizedFromTheBoundedTrace) {
  const std::string ref =
      "def count_down(n):\n    steps = 0\n    while n > 0:\n        n -= 1\n        steps += 1\n"
      "    return steps\n";
  const std::string cand =
      "def count_down(n):\n    steps = 0\n    while n > 0 and steps < 10 ** 6:\n        n += 1\n   "
      "     steps += 1\n"
      "    return steps\n";
  auto test = tracer::TestCase::Call("count_down", "[3]");
  auto c = PreparedProgram::Build(cand);
  auto rp = PreparedProgram::Build(ref);
  ASSERT_TRUE(c.ok() && rp.ok());
  auto ct = testing::Trace(cand, test, /*max_events=*/2000);
  auto rt = testing::Trace(ref, test);
  ASSERT_TRUE(ct->truncated());
  DivergenceReport r = FindDivergence(*c.value(), *ct, *rp.value(), *rt);
  ASSERT_TRUE(r.earliest.has_value()) << r.note;
  EXPECT_EQ(SpanText(cand, r.earliest->span), "n += 1");
}

}  // namespace
}  // namespace egca::diff
