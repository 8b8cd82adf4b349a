// Golden dumps of alignments and divergence reports: each case is a candidate/reference
// pair in tests/diff/golden/<case>.cand.py / .ref.py with its call in <case>.call
// ("function\n[args as JSON]"), and the reviewed dump in <case>.expected.
// Regenerate after a reviewed change with EGCA_UPDATE_GOLDEN=1. "rebinding" and
// "comprehension" (issue 16): a value divergence is blamed on the assignment after which
// the values differ (not the first binding in the block), and before a comprehension of
// the same block that uses the value.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "diff_test_util.h"

namespace egca::diff {
namespace {

using testing::ReadSource;

class DiffGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(DiffGolden, MatchesReviewedDump) {
  const std::string base = "tests/diff/golden/" + GetParam();
  std::string call = ReadSource(base + ".call");
  ASSERT_FALSE(call.empty()) << base << ".call missing";
  size_t nl = call.find('\n');
  std::string fn = call.substr(0, nl);
  std::string args = call.substr(nl + 1);
  while (!args.empty() && (args.back() == '\n' || args.back() == ' ')) args.pop_back();
  DivergenceReport r = testing::Diff(ReadSource(base + ".cand.py"), ReadSource(base + ".ref.py"),
                                     tracer::TestCase::Call(fn, args));
  std::string dump = DumpReport(r) + DumpAlignment(r);
  if (std::getenv("EGCA_UPDATE_GOLDEN")) {
    std::ofstream(std::string(EGCA_SOURCE_DIR) + "/" + base + ".expected") << dump;
  }
  EXPECT_EQ(dump, ReadSource(base + ".expected"));
}

INSTANTIATE_TEST_SUITE_P(Cases, DiffGolden,
                         ::testing::Values("lis", "renamed", "reordered", "extra_print",
                                           "value_bug", "early_return", "recursion", "rebinding",
                                           "comprehension"));

}  // namespace
}  // namespace egca::diff
