// Properties over thousands of seeded random inputs.
#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "egca/credit/grpo.h"
#include "egca/credit/murphy.h"
#include "egca/credit/token_credit.h"

namespace egca::credit {
namespace {

SourceSpan RandomSpan(std::mt19937_64& rng, uint32_t limit) {
  std::uniform_int_distribution<uint32_t> pos(0, limit + 20);
  SourceSpan s;
  s.begin_byte = pos(rng);
  s.end_byte = s.begin_byte + std::uniform_int_distribution<uint32_t>(0, 40)(rng);
  s.begin = {1, 0};
  s.end = {1, 0};
  return s;
}

TEST(CreditProperty, TokenOperatorPreservesAdvantageSum) {
  std::mt19937_64 rng(20261121);
  int localized = 0;
  int fallbacks = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    CreditSample s;
    s.mode = static_cast<FailureMode>(rng() % 4);
    s.advantage = std::uniform_real_distribution<double>(-5.0, 5.0)(rng);
    const int tokens = static_cast<int>(rng() % 300);
    uint32_t at = 0;
    for (int t = 0; t < tokens; ++t) {
      // Mostly 1-8 byte tokens, some zero-width, some overlapping the previous one
      // (byte-fallback pieces of one UTF-8 character share bytes).
      const uint32_t width = (rng() % 20 == 0) ? 0 : 1 + static_cast<uint32_t>(rng() % 8);
      const uint32_t begin = (at > 0 && rng() % 30 == 0) ? at - 1 : at;
      s.token_bytes.push_back({begin, begin + width});
      at = begin + width;
    }
    s.code_offset = at == 0 ? 0 : static_cast<uint32_t>(rng() % (at / 2 + 1));
    if (rng() % 5) s.error_span = RandomSpan(rng, at);
    if (rng() % 5) s.earliest_divergence = RandomSpan(rng, at);
    if (rng() % 2) s.last_divergence = RandomSpan(rng, at);
    for (int k = static_cast<int>(rng() % 4); k > 0; --k) {
      s.executed_boundaries.push_back(RandomSpan(rng, at));
    }
    s.sample_index = static_cast<uint64_t>(iter);
    TokenCreditOptions o;
    o.target = static_cast<LocalizationTarget>(rng() % 4);
    o.soft_weight = (rng() % 2) ? 1.0 : std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    o.seed = rng();
    TokenCreditStats stats;
    StatusOr<TokenCredit> c = AssignTokenCredit(s, o, &stats);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ASSERT_EQ(c->advantages.size(), s.token_bytes.size());
    if (tokens == 0) continue;
    double sum = 0.0;
    for (double a : c->advantages) {
      ASSERT_TRUE(std::isfinite(a));
      sum += a;
    }
    ASSERT_NEAR(sum, s.advantage, 1e-9 * std::max(1.0, std::fabs(s.advantage))) << "iter " << iter;
    if (c->placement == CreditPlacement::kLocalized) {
      ++localized;
      // The operator's binary search (sorted tokens) must find exactly the tokens the plain
      // linear scan of TokensOverlappingSpan finds.
      const std::vector<uint32_t> expected =
          TokensOverlappingSpan(s.token_bytes, s.code_offset, *c->span);
      ASSERT_EQ(c->span_token_count, expected.size()) << "iter " << iter;
      ASSERT_EQ(c->span_token_begin, expected.front()) << "iter " << iter;
      if (o.soft_weight == 1.0) {
        int nonzero = 0;
        for (double a : c->advantages) nonzero += a != 0.0;
        ASSERT_LE(nonzero, static_cast<int>(c->span_token_count));
      }
    }
    fallbacks += static_cast<int>(stats.fallbacks());
  }
  // The generator must exercise both paths, or the property says little.
  EXPECT_GT(localized, 500);
  EXPECT_GT(fallbacks, 200);
}

TEST(CreditProperty, UnorderedTokenRangesUseTheSameOverlapRule) {
  // Shuffled token ranges (no tokenizer emits them, but nothing forbids them): the credited
  // tokens are still exactly those intersecting the span.
  std::mt19937_64 rng(5);
  for (int iter = 0; iter < 2000; ++iter) {
    CreditSample s;
    s.mode = FailureMode::kLogic;
    s.advantage = 1.0;
    uint32_t at = 0;
    for (int t = 0; t < 64; ++t) {
      const uint32_t w = 1 + static_cast<uint32_t>(rng() % 5);
      s.token_bytes.push_back({at, at + w});
      at += w;
    }
    std::shuffle(s.token_bytes.begin(), s.token_bytes.end(), rng);
    s.earliest_divergence = RandomSpan(rng, at);
    StatusOr<TokenCredit> c = AssignTokenCredit(s, {});
    ASSERT_TRUE(c.ok());
    const uint32_t b = s.earliest_divergence->begin_byte;
    const uint32_t e = s.earliest_divergence->end_byte;
    if (e <= b) continue;  // empty spans fall back (tested elsewhere)
    int overlapping = 0;
    for (const TokenByteRange& tok : s.token_bytes) overlapping += tok.begin < e && b < tok.end;
    if (overlapping == 0) continue;
    for (size_t t = 0; t < s.token_bytes.size(); ++t) {
      const TokenByteRange& tok = s.token_bytes[t];
      const bool overlaps = tok.begin < e && b < tok.end;
      ASSERT_EQ(c->advantages[t] != 0.0, overlaps) << "iter " << iter << " token " << t;
      if (overlaps) {
        ASSERT_DOUBLE_EQ(c->advantages[t], 1.0 / overlapping);
      }
    }
  }
}

TEST(CreditProperty, AdvantagesAreShiftInvariant) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 5000; ++iter) {
    const int g = 1 + static_cast<int>(rng() % 32);
    std::vector<double> r(g);
    for (double& x : r) x = (rng() % 3 == 0) ? 0.0 : static_cast<double>(rng() % 9) / 8.0;
    const double c = std::uniform_real_distribution<double>(-10.0, 10.0)(rng);
    std::vector<double> shifted = r;
    for (double& x : shifted) x += c;
    for (AdvantageNormalization n :
         {AdvantageNormalization::kMeanCentered, AdvantageNormalization::kMeanStd}) {
      const std::vector<double> a = GroupAdvantages(r, {n, 1e-6});
      const std::vector<double> b = GroupAdvantages(shifted, {n, 1e-6});
      for (int i = 0; i < g; ++i) ASSERT_NEAR(a[i], b[i], 1e-8) << "iter " << iter;
    }
  }
}

MurphyTree RandomTree(std::mt19937_64& rng) {
  MurphyTree t;
  const int turns = 1 + static_cast<int>(rng() % 4);
  const int g = 1 + static_cast<int>(rng() % 6);
  auto reward = [&rng] { return static_cast<double>(rng() % 5) / 4.0; };  // 0, .25, ..., 1
  for (int i = 0; i < g; ++i) t.AddResponse(-1, reward());
  for (int turn = 1; turn < turns; ++turn) {
    const size_t existing = t.nodes.size();
    for (size_t id = 0; id < existing; ++id) {
      const MurphyNode& n = t.nodes[id];
      if (n.turn != turn || t.IsSolved(n) || rng() % 4 == 0) continue;  // some failures unexpanded
      const int children = 1 + static_cast<int>(rng() % 6);
      for (int k = 0; k < children; ++k) t.AddResponse(static_cast<int>(id), reward());
    }
  }
  return t;
}

TEST(CreditProperty, MaRSNeverLowersCredit) {
  std::mt19937_64 rng(11);
  for (int iter = 0; iter < 3000; ++iter) {
    MurphyTree t = RandomTree(rng);
    ASSERT_TRUE(ValidateTree(t).ok());
    if (rng() % 2) {
      t = Prune(t, {static_cast<PruneStrategy>(rng() % 3), static_cast<int>(rng() % 5), true});
    }
    const std::vector<double> r = BackupRewards(t, {BackupStrategy::kMaRS, 1.0});
    const std::vector<double> m = BackupRewards(t, {BackupStrategy::kMeRS, 0.9});
    for (const MurphyNode& n : t.nodes) {
      if (!n.retained) {
        ASSERT_TRUE(std::isnan(r[n.id]));
        continue;
      }
      ASSERT_GE(r[n.id], n.reward);
      ASSERT_LE(r[n.id], t.max_reward);
      ASSERT_GE(m[n.id], 0.0);
      ASSERT_LE(m[n.id], t.max_reward);
      for (int c : n.children) {
        if (t.nodes[c].retained) {
          ASSERT_GE(r[n.id], r[c]);
        }
      }
    }
  }
}

TEST(CreditProperty, PruningKeepsExactlyMinOfBudgetAndAvailable) {
  std::mt19937_64 rng(13);
  for (int iter = 0; iter < 3000; ++iter) {
    const MurphyTree t = RandomTree(rng);
    const int b = static_cast<int>(rng() % 7);
    // IntraP: every group under a retained parent (or the prompt) keeps min(b, |group|).
    const MurphyTree intra = Prune(t, {PruneStrategy::kIntraGroup, b, true});
    ASSERT_TRUE(ValidateTree(intra).ok());
    auto kept = [&intra](const std::vector<int>& group) {
      int k = 0;
      for (int id : group) k += intra.nodes[id].retained;
      return k;
    };
    ASSERT_EQ(kept(intra.root_group), std::min<int>(b, static_cast<int>(t.root_group.size())));
    for (const MurphyNode& n : intra.nodes) {
      if (n.retained && !n.children.empty()) {
        ASSERT_EQ(kept(n.children), std::min<int>(b, static_cast<int>(n.children.size())));
      }
    }
    // InterP: per turn, the child groups of retained failed nodes keep min(b, available)
    // groups, each kept whole.
    const MurphyTree inter = Prune(t, {PruneStrategy::kInterGroup, b, true});
    ASSERT_TRUE(ValidateTree(inter).ok());
    for (int turn = 1; turn < t.num_turns(); ++turn) {
      int available = 0;
      int retained = 0;
      for (const MurphyNode& n : inter.nodes) {
        if (n.turn != turn || !n.retained || n.children.empty()) continue;
        ++available;
        int k = 0;
        for (int c : n.children) k += inter.nodes[c].retained;
        ASSERT_TRUE(k == 0 || k == static_cast<int>(n.children.size()));
        retained += k > 0;
      }
      ASSERT_EQ(retained, std::min(b, available)) << "iter " << iter << " turn " << turn;
    }
  }
}

}  // namespace
}  // namespace egca::credit
