// Golden dumps: the credit map of one sample per mode and a Murphy tree before/after
// backup and pruning. Regenerate with EGCA_UPDATE_GOLDEN=1 and review the diff.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "egca/credit/murphy.h"
#include "egca/credit/token_credit.h"

namespace egca::credit {
namespace {

std::string GoldenPath(const std::string& name) {
  return std::string(EGCA_SOURCE_DIR) + "/tests/credit/golden/" + name;
}

void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string path = GoldenPath(name);
  const char* update = std::getenv("EGCA_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << "missing golden file " << path;
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "golden mismatch: " << path;
}

// The LIS example of the EGCA paper (Appendix G), fenced as a model would answer, with
// hand-made token boundaries (word pieces) standing in for a tokenizer.
constexpr char kCompletion[] =
    "```python\n"
    "def lis(nums):\n"
    "    dp = [1] * len(nums)\n"
    "    for i in range(1, len(nums)):\n"
    "        for j in range(i):\n"
    "            if nums[i] >= nums[j]:\n"
    "                dp[i] = max(dp[i], dp[j] + 1)\n"
    "    return max(dp)\n"
    "```";

std::vector<TokenByteRange> WordPieces(const std::string& text) {
  // A token is a run of identifier characters, a run of spaces, or one other byte.
  std::vector<TokenByteRange> out;
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  uint32_t i = 0;
  while (i < text.size()) {
    uint32_t j = i + 1;
    if (ident(text[i])) {
      while (j < text.size() && ident(text[j])) ++j;
    } else if (text[i] == ' ') {
      while (j < text.size() && text[j] == ' ') ++j;
    }
    out.push_back({i, j});
    i = j;
  }
  return out;
}

TEST(CreditGolden, LogicSampleOnLisExample) {
  const std::string completion = kCompletion;
  const uint32_t code_offset = 10;  // after "```python\n"
  const std::string code = completion.substr(code_offset);
  const LineIndex lines(code);
  CreditSample s;
  s.mode = FailureMode::kLogic;
  s.advantage = -1.5;
  s.token_bytes = WordPieces(completion);
  s.code_offset = code_offset;
  // The divergence block: the comparison "nums[i] >= nums[j]" on code line 5.
  const size_t at = code.find("nums[i] >= nums[j]");
  s.earliest_divergence =
      lines.SpanFromBytes(static_cast<uint32_t>(at), static_cast<uint32_t>(at + 18));
  StatusOr<TokenCredit> c = AssignTokenCredit(s, {});
  ASSERT_TRUE(c.ok());
  ExpectGolden("credit_map_logic.txt", DumpCreditMap(s, *c, completion));

  TokenCreditOptions soft;
  soft.soft_weight = 0.75;
  c = AssignTokenCredit(s, soft);
  ASSERT_TRUE(c.ok());
  ExpectGolden("credit_map_logic_soft.txt", DumpCreditMap(s, *c, completion));
}

TEST(CreditGolden, SyntaxSampleWithUnmappedSpan) {
  const std::string completion = "x = (1,\n";
  CreditSample s;
  s.mode = FailureMode::kSyntax;
  s.advantage = -0.75;
  s.token_bytes = WordPieces(completion);
  s.error_span = LineIndex(completion).SpanFromBytes(8, 8);  // "unexpected EOF": empty span
  StatusOr<TokenCredit> c = AssignTokenCredit(s, {});
  ASSERT_TRUE(c.ok());
  ExpectGolden("credit_map_syntax_fallback.txt", DumpCreditMap(s, *c, completion));
}

MurphyTree GoldenTree() {
  MurphyTree t;
  t.task = "count vowels";
  t.AddResponse(-1, 0.5, "", "AssertionError: count('AEIOU') == 5, got 0");
  t.AddResponse(-1, 1.0);
  t.AddResponse(-1, 0.0, "", "SyntaxError: '(' was never closed (line 3)");
  t.AddResponse(-1, 0.25, "", "failed 3 of 4 tests\nfirst: count('') == 0, got None");
  for (double r : {1.0, 0.5, 0.0, 0.0}) t.AddResponse(0, r);
  for (double r : {0.0, 0.0, 0.25, 0.0}) t.AddResponse(2, r);
  for (int k = 0; k < 4; ++k) t.AddResponse(3, 0.5);
  return t;
}

TEST(CreditGolden, MurphyTreeDumps) {
  const MurphyTree tree = GoldenTree();
  std::string out = "== generated ==\n" + DumpMurphyTree(tree);
  const std::vector<double> mars = BackupRewards(tree, {BackupStrategy::kMaRS, 1.0});
  const NodeAdvantages a = ComputeNodeAdvantages(tree, mars);
  MurphyDumpOptions o;
  o.credited = &mars;
  o.advantages = &a;
  out += "== MaRS ==\n" + DumpMurphyTree(tree, o);
  const MurphyTree pruned = Prune(tree, {PruneStrategy::kIntraGroup, 2, true});
  const std::vector<double> pm = BackupRewards(pruned, {BackupStrategy::kMeRS, 0.5});
  const NodeAdvantages pa = ComputeNodeAdvantages(pruned, pm);
  o.credited = &pm;
  o.advantages = &pa;
  out += "== IntraP b=2, MeRS gamma=0.5 ==\n" + DumpMurphyTree(pruned, o);
  out += ComputeTreeSizes(pruned).ToString();
  ExpectGolden("murphy_tree.txt", out);
}

}  // namespace
}  // namespace egca::credit
