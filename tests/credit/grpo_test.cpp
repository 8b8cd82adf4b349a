#include "egca/credit/grpo.h"

#include <cmath>

#include <gtest/gtest.h>

namespace egca::credit {
namespace {

TEST(GroupAdvantages, MeanCenteredMatchesEgcaEq2) {
  // rewards 1, 0.5, 0, 0.5: mean = 2/4 = 0.5 -> A = R - 0.5
  const std::vector<double> a =
      GroupAdvantages({1.0, 0.5, 0.0, 0.5}, {AdvantageNormalization::kMeanCentered, 1e-6});
  ASSERT_EQ(a.size(), 4u);
  EXPECT_DOUBLE_EQ(a[0], 0.5);   // 1 - 0.5
  EXPECT_DOUBLE_EQ(a[1], 0.0);   // 0.5 - 0.5
  EXPECT_DOUBLE_EQ(a[2], -0.5);  // 0 - 0.5
  EXPECT_DOUBLE_EQ(a[3], 0.0);
}

TEST(GroupAdvantages, MeanStdUsesPopulationStd) {
  // rewards 1, 0, 0, 0: mean = 0.25; deviations 0.75, -0.25 x3;
  // population var = (0.5625 + 3 * 0.0625) / 4 = 0.75 / 4 = 0.1875; std = 0.4330127019
  // A_0 = 0.75 / 0.4330127019 = 1.7320508076 (= sqrt 3); A_k = -0.25 / 0.4330127 = -0.5773502692
  const std::vector<double> a =
      GroupAdvantages({1.0, 0.0, 0.0, 0.0}, {AdvantageNormalization::kMeanStd, 0.0});
  EXPECT_NEAR(a[0], std::sqrt(3.0), 1e-12);
  EXPECT_NEAR(a[1], -1.0 / std::sqrt(3.0), 1e-12);
  EXPECT_NEAR(a[3], -1.0 / std::sqrt(3.0), 1e-12);
}

TEST(GroupAdvantages, EpsIsAddedToStd) {
  // rewards 1, 0: mean 0.5, std 0.5; eps 0.5 -> A = 0.5 / (0.5 + 0.5) = 0.5
  const std::vector<double> a =
      GroupAdvantages({1.0, 0.0}, {AdvantageNormalization::kMeanStd, 0.5});
  EXPECT_DOUBLE_EQ(a[0], 0.5);
  EXPECT_DOUBLE_EQ(a[1], -0.5);
}

TEST(GroupAdvantages, AllEqualAndSingletonGiveZeroNotNaN) {
  for (AdvantageNormalization n :
       {AdvantageNormalization::kMeanCentered, AdvantageNormalization::kMeanStd}) {
    // 0.1 x 3: sum/3 is 0.10000000000000002 in binary, which must not leak as 1e-17 / eps.
    for (double a : GroupAdvantages({0.1, 0.1, 0.1}, {n, 0.0})) {
      EXPECT_EQ(a, 0.0);
    }
    const std::vector<double> one = GroupAdvantages({0.7}, {n, 0.0});  // G = 1
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0], 0.0);
  }
  EXPECT_TRUE(GroupAdvantages({}).empty());
}

TEST(GroupStats, MeanAndStd) {
  // 0.2, 0.4, 0.9: mean = 1.5/3 = 0.5; var = (0.09 + 0.01 + 0.16)/3 = 0.26/3 = 0.0866667
  const GroupStats s = ComputeGroupStats({0.2, 0.4, 0.9});
  EXPECT_EQ(s.size, 3);
  EXPECT_NEAR(s.mean, 0.5, 1e-15);
  EXPECT_NEAR(s.std, std::sqrt(0.26 / 3.0), 1e-15);
  EXPECT_FALSE(s.all_equal);
}

TEST(ConstrainedReward, GatesOnConstraints) {
  EXPECT_DOUBLE_EQ(ConstrainedReward(0.75, true), 0.75);  // R_hat * 1
  EXPECT_DOUBLE_EQ(ConstrainedReward(1.0, false), 0.0);   // R_hat * 0
}

TEST(BinaryReward, OneOnlyWhenEveryTestPassesAndConstraintsHold) {
  EXPECT_DOUBLE_EQ(BinaryReward(4, 4, true), 1.0);
  EXPECT_DOUBLE_EQ(BinaryReward(3, 4, true), 0.0);   // partial credit would be 0.75
  EXPECT_DOUBLE_EQ(BinaryReward(4, 4, false), 0.0);  // I_C = 0
  EXPECT_DOUBLE_EQ(BinaryReward(0, 0, true), 0.0);   // no tests: nothing shown to pass
  // A group where the partial reward gives a failing sample a positive advantage:
  // R = (1, 0.5, 0, 0) -> A_2 = 0.5 - 0.375 = +0.125; binary R = (1, 0, 0, 0) -> A_2 = -0.25.
  const GroupAdvantageOptions eq2{AdvantageNormalization::kMeanCentered};
  const auto partial = GroupAdvantages({1.0, 0.5, 0.0, 0.0}, eq2);
  const auto binary = GroupAdvantages({BinaryReward(2, 2, true), BinaryReward(1, 2, true),
                                       BinaryReward(0, 2, true), BinaryReward(0, 2, true)},
                                      eq2);
  EXPECT_DOUBLE_EQ(partial[1], 0.125);
  EXPECT_DOUBLE_EQ(binary[1], -0.25);
}

}  // namespace
}  // namespace egca::credit
