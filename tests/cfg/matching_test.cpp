// Scope and block matching between a candidate and its reference.
#include "egca/cfg/matching.h"

#include <gtest/gtest.h>

#include "egca/cfg/cfg.h"

namespace egca::cfg {
namespace {

ProgramCfg MustBuild(const std::string& src) {
  StatusOr<ProgramCfg> p = ProgramCfg::Build(src);
  EXPECT_TRUE(p.ok() && p->parsed());
  return std::move(p).value();
}

constexpr const char* kReference =
    "def below_zero(ops):\n"
    "    balance = 0\n"
    "    for op in ops:\n"
    "        balance += op\n"
    "        if balance < 0:\n"
    "            return True\n"
    "    return False\n";

TEST(Matching, IdenticalStructureMatchesEveryBlockInOrder) {
  ProgramCfg ref = MustBuild(kReference);
  ProgramCfg cand = MustBuild(
      "def below_zero(xs):\n    b = 0\n    for x in xs:\n        b = b + x\n"
      "        if b <= -1:\n            return True\n    return False\n");
  BlockMatching m = MatchBlocks(cand, 1, ref, 1);
  const FunctionCfg& f = ref.scopes()[1];
  ASSERT_EQ(m.pairs.size(), f.block_count());
  for (const BlockMatch& p : m.pairs) {
    EXPECT_EQ(p.candidate, p.reference);
    EXPECT_DOUBLE_EQ(p.score, 1.0);
  }
  EXPECT_TRUE(m.unmatched_candidate.empty());
  EXPECT_TRUE(m.unmatched_reference.empty());
}

TEST(Matching, ExtraCandidateBlockStaysUnmatched) {
  ProgramCfg ref = MustBuild(kReference);
  // An extra guard before the loop: one more block; the rest keeps its correspondence.
  ProgramCfg cand = MustBuild(
      "def below_zero(ops):\n    if not ops:\n        return False\n    balance = 0\n"
      "    for op in ops:\n        balance += op\n        if balance < 0:\n"
      "            return True\n    return False\n");
  BlockMatching m = MatchBlocks(cand, 1, ref, 1);
  const FunctionCfg& c = cand.scopes()[1];
  const FunctionCfg& r = ref.scopes()[1];
  auto block_of = [](const FunctionCfg& f, int line) -> BlockId {
    for (BlockId b = 0; b < f.block_count(); ++b) {
      const auto& s = f.block(b).statements;
      if (!s.empty() && s.front().span.begin.line == line) return b;
    }
    return 0;
  };
  // candidate "for" (line 5) ~ reference "for" (line 3); "if balance" 7 ~ 5
  EXPECT_EQ(m.ReferenceFor(block_of(c, 5)), block_of(r, 3));
  EXPECT_EQ(m.ReferenceFor(block_of(c, 7)), block_of(r, 5));
  EXPECT_EQ(m.CandidateFor(block_of(r, 7)), block_of(c, 9));
  EXPECT_EQ(m.ReferenceFor(c.entry), r.entry);
  EXPECT_EQ(m.ReferenceFor(c.exit), r.exit);
  EXPECT_FALSE(m.unmatched_candidate.empty());
  // Order preserved: both sides strictly increasing.
  for (size_t i = 1; i < m.pairs.size(); ++i) {
    EXPECT_LT(m.pairs[i - 1].candidate, m.pairs[i].candidate);
    EXPECT_LT(m.pairs[i - 1].reference, m.pairs[i].reference);
  }
}

TEST(Matching, ScopesPairByNameThenSimilarity) {
  ProgramCfg ref = MustBuild(
      "from typing import List\n\ndef solve(xs: List[int]) -> int:\n    return sum(xs)\n");
  ProgramCfg cand = MustBuild(
      "def helper(v):\n    t = 0\n    for x in v:\n        t += x\n    return t\n\n"
      "def solve(xs):\n    return helper(xs)\n");
  std::vector<ScopeMatch> m = MatchScopes(cand, ref);
  ASSERT_GE(m.size(), 2u);
  EXPECT_EQ(m[0].candidate, 0);
  EXPECT_EQ(m[0].reference, 0);
  int32_t solve = cand.FindScopeByName("solve");
  bool found = false;
  for (const ScopeMatch& s : m) {
    if (s.candidate == solve) {
      EXPECT_EQ(s.reference, ref.FindScopeByName("solve"));
      found = true;
    }
    EXPECT_NE(s.candidate, cand.FindScopeByName("helper"));  // nothing left to pair with
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace egca::cfg
