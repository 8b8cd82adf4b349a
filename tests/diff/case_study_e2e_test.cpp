// A1: the EGCA paper's appendix-G case study. longest_increasing_subsequence with `>=`
// instead of `>` on [1, 3, 3, 5]: the first divergence is at i=2, j=1, on the comparison.
#include <gtest/gtest.h>

#include "diff_test_util.h"

namespace egca::diff {
namespace {

using testing::Diff;
using testing::ReadSource;
using testing::SpanText;

std::string Lis(const std::string& name) {
  std::string src = ReadSource("tests/tracer/golden/" + name);
  return src.substr(0, src.find("\n\nresult = ")) + "\n";
}

std::string ContextValue(const Divergence& d, const std::string& name) {
  for (const auto& [n, v] : d.context) {
    if (n == name) return v;
  }
  return "<none>";
}

TEST(DiffCaseStudy, FirstDivergenceAtI2J1OnTheComparison) {
  const std::string buggy = Lis("lis_buggy.py");
  const std::string correct = Lis("lis_correct.py");
  auto test = tracer::TestCase::Call("longest_increasing_subsequence", "[[1, 3, 3, 5]]", "3");
  DivergenceReport r = Diff(buggy, correct, test);
  ASSERT_TRUE(r.earliest.has_value()) << r.note << "\n" << DumpAlignment(r);
  const Divergence& d = *r.earliest;
  EXPECT_EQ(d.kind, DivergenceKind::kControl) << DumpDivergence(d);
  EXPECT_EQ(ContextValue(d, "i"), "2");
  EXPECT_EQ(ContextValue(d, "j"), "1");
  EXPECT_EQ(d.line, 10);
  std::string text = SpanText(buggy, d.span);
  EXPECT_NE(text.find("nums[i] >= nums[j]"), std::string::npos) << text;
  // The reference's own step at the same place is the `>` comparison.
  ASSERT_GE(d.reference_step, 0);
  EXPECT_EQ(r.alignment.reference_steps[d.reference_step].first_line, 10);
  // Ablation targets exist and are executed boundaries of the candidate.
  ASSERT_TRUE(r.last.has_value());
  EXPECT_GE(r.divergence_count, 1);
  ASSERT_TRUE(r.random_boundary.has_value());
  EXPECT_FALSE(r.executed_boundaries.empty());
}

TEST(DiffCaseStudy, IdenticalProgramsDoNotDiverge) {
  const std::string correct = Lis("lis_correct.py");
  auto test = tracer::TestCase::Call("longest_increasing_subsequence", "[[1, 3, 3, 5]]", "3");
  DivergenceReport r = Diff(correct, correct, test);
  EXPECT_FALSE(r.earliest.has_value()) << DumpReport(r);
  EXPECT_EQ(r.divergence_count, 0);
  for (const AlignedPair& p : r.alignment.pairs) {
    EXPECT_GE(p.candidate, 0);
    EXPECT_GE(p.reference, 0);
  }
}

TEST(DiffCaseStudy, RandomBoundaryIsSeededAndDeterministic) {
  const std::string buggy = Lis("lis_buggy.py");
  const std::string correct = Lis("lis_correct.py");
  auto test = tracer::TestCase::Call("longest_increasing_subsequence", "[[1, 3, 3, 5]]", "3");
  DivergenceReport a = Diff(buggy, correct, test, DivergenceOptions().set_random_seed(7));
  DivergenceReport b = Diff(buggy, correct, test, DivergenceOptions().set_random_seed(7));
  ASSERT_TRUE(a.random_boundary && b.random_boundary);
  EXPECT_EQ(*a.random_boundary, *b.random_boundary);
  // Over seeds, more than one boundary gets drawn.
  std::set<uint32_t> seen;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    DivergenceReport r = Diff(buggy, correct, test, DivergenceOptions().set_random_seed(seed));
    if (r.random_boundary) seen.insert(r.random_boundary->begin_byte);
  }
  EXPECT_GT(seen.size(), 1u);
}

}  // namespace
}  // namespace egca::diff
