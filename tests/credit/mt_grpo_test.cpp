#include "egca/credit/mt_grpo.h"

#include <cmath>

#include <gtest/gtest.h>

namespace egca::credit {
namespace {

MtGrpoOptions Alpha(double alpha) {
  MtGrpoOptions o;
  o.alpha = alpha;
  o.normalization = {AdvantageNormalization::kMeanStd, 0.0};
  return o;
}

TEST(MtGrpo, TwoTurns) {
  // R^I = 1 0 1 0: mean .5, std .5 -> A^I = 1 -1 1 -1
  // R^O = 1 1 0 0:                 -> A^O = 1 1 -1 -1
  // turn 1 = A^I + 0.5 A^O = 1.5 -0.5 0.5 -1.5; turn 2 = A^O
  StatusOr<TurnAdvantages> a = MtGrpoAdvantages({{1, 0, 1, 0}}, {1, 1, 0, 0}, Alpha(0.5));
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->num_turns, 2);
  const double turn1[] = {1.5, -0.5, 0.5, -1.5};
  const double turn2[] = {1, 1, -1, -1};
  for (int i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(a->advantages[i][0], turn1[i]) << i;
    EXPECT_DOUBLE_EQ(a->advantages[i][1], turn2[i]) << i;
  }
}

TEST(MtGrpo, TiedOutcomesStillCreditTurnOne) {
  // Every outcome is 1: A^O = 0. MT-GRPO turn 1 = A^I = 1 -1 1 -1; turn 2 = 0.
  StatusOr<TurnAdvantages> mt = MtGrpoAdvantages({{1, 0, 1, 0}}, {1, 1, 1, 1}, Alpha(1.0));
  ASSERT_TRUE(mt.ok());
  const double turn1[] = {1, -1, 1, -1};
  for (int i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(mt->advantages[i][0], turn1[i]);
    EXPECT_EQ(mt->advantages[i][1], 0.0);
  }
  // GRPO-OR gives turn 1 nothing at all.
  StatusOr<TurnAdvantages> orr =
      OutcomeOnlyAdvantages({{1, 0, 1, 0}}, {1, 1, 1, 1}, {AdvantageNormalization::kMeanStd, 0.0});
  ASSERT_TRUE(orr.ok());
  for (const std::vector<double>& row : orr->advantages) {
    EXPECT_EQ(row[0], 0.0);
    EXPECT_EQ(row[1], 0.0);
  }
}

TEST(MtGrpo, ThreeTurnsDiscountedSum) {
  // A^I_1 = 1 -1, A^I_2 = -1 1, A^O = 1 -1, alpha = .5:
  // turn 3 = A^O = 1 -1; turn 2 = A^I_2 + .5 A^O = -.5 .5;
  // turn 1 = A^I_1 + .5 A^I_2 + .25 A^O = 1 - .5 + .25 = .75 and -.75.
  StatusOr<TurnAdvantages> a = MtGrpoAdvantages({{1, 0}, {0, 1}}, {1, 0}, Alpha(0.5));
  ASSERT_TRUE(a.ok());
  EXPECT_DOUBLE_EQ(a->advantages[0][0], 0.75);
  EXPECT_DOUBLE_EQ(a->advantages[1][0], -0.75);
  EXPECT_DOUBLE_EQ(a->advantages[0][1], -0.5);
  EXPECT_DOUBLE_EQ(a->advantages[0][2], 1.0);
}

TEST(MtGrpo, MergedRewardBaseline) {
  // merged = R^I + R^O = 2 1 1 0: mean 1, var (1 + 0 + 0 + 1)/4 = .5, std .70711
  // A = 1.41421 0 0 -1.41421 on both turns.
  StatusOr<TurnAdvantages> a =
      MergedRewardAdvantages({{1, 0, 1, 0}}, {1, 1, 0, 0}, {AdvantageNormalization::kMeanStd, 0.0});
  ASSERT_TRUE(a.ok());
  EXPECT_NEAR(a->advantages[0][0], std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(a->advantages[0][1], std::sqrt(2.0), 1e-12);
  EXPECT_EQ(a->advantages[1][0], 0.0);
  EXPECT_NEAR(a->advantages[3][1], -std::sqrt(2.0), 1e-12);
}

TEST(MtGrpo, SingleTurnIsPlainGrpoAndGroupOfOneIsZero) {
  StatusOr<TurnAdvantages> a = MtGrpoAdvantages({}, {1, 0}, Alpha(0.5));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->num_turns, 1);
  EXPECT_DOUBLE_EQ(a->advantages[0][0], 1.0);  // (1 - .5) / .5
  a = MtGrpoAdvantages({{0.3}}, {0.8}, Alpha(0.5));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->advantages[0][0], 0.0);
  EXPECT_EQ(a->advantages[0][1], 0.0);
}

TEST(MtGrpo, ShapeAndValueErrors) {
  StatusOr<TurnAdvantages> a = MtGrpoAdvantages({{1, 0, 1}}, {1, 1, 0, 0});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("turn 1"), std::string::npos);
  EXPECT_FALSE(MtGrpoAdvantages({{1, std::nan("")}}, {1, 1}).ok());
  EXPECT_FALSE(OutcomeOnlyAdvantages({}, {1, INFINITY}).ok());
}

TEST(MtGrpo, BroadcastToTokens) {
  // prompt (-1), turn 0 tokens, tool output (-1), turn 1 tokens
  StatusOr<std::vector<double>> t = BroadcastTurnAdvantages({1.5, -1.0}, {-1, 0, 0, -1, 1, 1});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, (std::vector<double>{0, 1.5, 1.5, 0, -1.0, -1.0}));
  EXPECT_FALSE(BroadcastTurnAdvantages({1.5}, {0, 1}).ok());
}

}  // namespace
}  // namespace egca::credit
