#include "egca/credit/reflexicoder.h"

#include <cmath>

#include <gtest/gtest.h>

namespace egca::credit {
namespace {

TEST(ReflectionFormat, ParsesThinkAnswerAndCycles) {
  const ReflectionTrajectory t = ParseReflectionTrajectory(
      "<think>plan</think>\n<answer>v0</answer>\n<reflection>bug in loop</reflection>"
      "<answer>v1</answer>\n  <reflection>ok now?</reflection>\n<answer>v2</answer>\n");
  ASSERT_TRUE(t.well_formed) << t.format_error;
  EXPECT_EQ(t.think, "plan");
  EXPECT_EQ(t.answers, (std::vector<std::string>{"v0", "v1", "v2"}));
  EXPECT_EQ(t.num_reflections(), 2);
  EXPECT_EQ(t.reflections[0], "bug in loop");
}

TEST(ReflectionFormat, NoReflectionIsWellFormed) {
  const ReflectionTrajectory t = ParseReflectionTrajectory("<think>a</think><answer>b</answer>");
  ASSERT_TRUE(t.well_formed);
  EXPECT_EQ(t.num_reflections(), 0);
}

TEST(ReflectionFormat, RejectsMalformedTrajectories) {
  const char* bad[] = {
      "<answer>b</answer>",                                            // no think
      "<think>a</think>",                                              // no answer
      "<think>a</think><answer>b",                                     // unclosed
      "<think>a</think><answer>b</answer><reflection>r</reflection>",  // reflection w/o answer
      "<think>a</think><answer>b</answer><answer>c</answer>",          // answer w/o reflection
      "<think>a</think>text<answer>b</answer>",                        // text between
      "<think>a</think><answer>b</answer> trailing",                   // text after
      "<think>a <answer>x</answer></think><answer>b</answer>",         // nested tag
      "<think>a</think><reflection>r</reflection><answer>b</answer>",  // wrong order
  };
  for (const char* text : bad) {
    const ReflectionTrajectory t = ParseReflectionTrajectory(text);
    EXPECT_FALSE(t.well_formed) << text;
    EXPECT_FALSE(t.format_error.empty()) << text;
  }
  ReflectionFormatOptions strict;
  strict.allow_whitespace_between_segments = false;
  EXPECT_FALSE(
      ParseReflectionTrajectory("<think>a</think> <answer>b</answer>", strict).well_formed);
}

TEST(ReflectionFormat, EnforcesMaxReflections) {
  std::string text = "<think>t</think><answer>a</answer>";
  for (int i = 0; i < 3; ++i) text += "<reflection>r</reflection><answer>a</answer>";
  ReflectionFormatOptions o;
  o.max_reflections = 3;
  EXPECT_TRUE(ParseReflectionTrajectory(text, o).well_formed);
  o.max_reflections = 2;
  const ReflectionTrajectory t = ParseReflectionTrajectory(text, o);
  EXPECT_FALSE(t.well_formed);
  EXPECT_NE(t.format_error.find("max_reflections=2"), std::string::npos);
}

TEST(ReflectionReward, CyclePenalty) {
  EXPECT_EQ(CyclePenalty(0), 1.0);
  EXPECT_EQ(CyclePenalty(5), 1.0);  // n <= n0
  // n = 6 (k = 1): 1/(1 + .1) * e^-.05 * (1 - .1 sin(pi/2)) = .909091 * .951229 * .9
  EXPECT_NEAR(CyclePenalty(6), 0.7782786200460388, 1e-12);
  // n = 7 (k = 2): 1/(1 + .1*4) * e^-.1 * (1 - .1 sin(pi)) = .714286 * .904837 * 1
  EXPECT_NEAR(CyclePenalty(7), 0.6463124414542568, 1e-12);
  // n = 8 (k = 3): 1/(1 + .9) * e^-.15 * (1 - .1 sin(3pi/2)) = .526316 * .860708 * 1.1
  EXPECT_NEAR(CyclePenalty(8), 0.4983046179302966, 1e-12);
}

TEST(ReflectionReward, WeightsAndSignals) {
  // w = e^.2, e^.4 over their sum 1.221403 + 1.491825 = 2.713227
  const std::vector<double> w = ImprovementWeights(2, 0.2);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NEAR(w[0], 0.4501660026875221, 1e-12);
  EXPECT_NEAR(w[1], 0.549833997312478, 1e-12);
  EXPECT_TRUE(ImprovementWeights(0, 0.2).empty());

  EXPECT_NEAR(ImprovementSignal(0.5, 0.7), std::tanh(2.0), 1e-12);   // +tanh(.2/.1)
  EXPECT_NEAR(ImprovementSignal(0.7, 0.5), -std::tanh(2.0), 1e-12);  // -tanh(.2/.1)
  EXPECT_DOUBLE_EQ(ImprovementSignal(1.0, 1.0), 0.05);               // h_pos at r_max
  EXPECT_DOUBLE_EQ(ImprovementSignal(0.5, 0.5), -1.0);               // -h_neg below r_max
  EXPECT_DOUBLE_EQ(ImprovementSignal(0.5, 0.50005), -1.0);           // within eps: no change
}

TEST(ReflectionReward, ImprovingTrajectory) {
  // r = .5 .7 1, n = 2, P = 1.
  // m1 = tanh(2) = .964028, m2 = tanh(3) = .995055;
  // sum w m = .450166 * .964028 + .549834 * .995055 = .981087
  // R_traj = 1 + .5 * .981087 = 1.490544
  // E = 1[1 >= 1] / 2 + (1 - .5) / (max(1, 1) + 1e-6) = .5 + .4999995 = .9999995
  // R = 1 * (.5 * 1.490544 + 1 * .9999995) + 1 * 1 = 2.745271
  StatusOr<ReflectionReward> r = ComputeReflectionReward(true, {0.5, 0.7, 1.0});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->n, 2);
  EXPECT_DOUBLE_EQ(r->penalty, 1.0);
  EXPECT_NEAR(r->trajectory, 1.490543687483807, 1e-12);
  EXPECT_NEAR(r->efficiency, 0.9999995000005, 1e-12);
  EXPECT_NEAR(r->overall, 2.7452713437424032, 1e-12);
}

TEST(ReflectionReward, MixedTrajectory) {
  // r = .2 .6 .4 .4: m = tanh(4), -tanh(2), -h_neg (stagnation below r_max) = .999329,
  // -.964028, -1; w = e^{.2t} / (e^.2 + e^.4 + e^.6) = .269308, .328936, .401756;
  // R_traj = 0 + .5 * (.269127 - .317104 - .401756) = .5 * -.449733 = -.224867
  // E = 0/3 + (.4 - .2)/(2 + 1e-6) = .09999995; R = .5 * -.224867 + .09999995 + 1 = .987567
  StatusOr<ReflectionReward> r = ComputeReflectionReward(true, {0.2, 0.6, 0.4, 0.4});
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->trajectory, -0.22486655652351437, 1e-12);
  EXPECT_NEAR(r->efficiency, 0.099999950000025, 1e-12);
  EXPECT_NEAR(r->overall, 0.9875666717382678, 1e-12);
  EXPECT_DOUBLE_EQ(r->signals[2], -1.0);
}

TEST(ReflectionReward, PenalizedDepth) {
  // n = 7 answers all at r_max: P(7) = .646312; m_t = h_pos = .05 -> sum w m = .05;
  // R_traj = 1 + .5 * .05 = 1.025; E = 1/7 + 0 = .142857;
  // R = .646312 * (.5 * 1.025 + .142857) + 1 = .646312 * .655357 + 1 = 1.423565
  StatusOr<ReflectionReward> r = ComputeReflectionReward(true, std::vector<double>(8, 1.0));
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->trajectory, 1.025, 1e-12);
  EXPECT_NEAR(r->overall, 1.4235654750244862, 1e-12);
}

TEST(ReflectionReward, NoReflection) {
  // n = 0 (egca's choice where the paper is silent): P = 1, no improvement terms,
  // E = 1[r_0 >= tau_q] / max(0, 1) + 0. r_0 = 1: R_traj = 1, E = 1, R = .5 + 1 + 1 = 2.5.
  StatusOr<ReflectionReward> r = ComputeReflectionReward(true, {1.0});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->overall, 2.5);
  // r_0 = .3: R_traj = 0, E = 0, R = xi = 1.
  r = ComputeReflectionReward(true, {0.3});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->overall, 1.0);
}

TEST(ReflectionReward, FormatGateZeroesEverything) {
  StatusOr<ReflectionReward> r = ComputeReflectionReward(false, {1.0, 1.0});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->overall, 0.0);
  EXPECT_TRUE(ComputeReflectionReward(false, {}).ok());
  EXPECT_FALSE(ComputeReflectionReward(true, {}).ok());
  EXPECT_FALSE(ComputeReflectionReward(true, {0.5, std::nan("")}).ok());
}

TEST(ReflectionReward, ToStringIsStable) {
  StatusOr<ReflectionReward> r = ComputeReflectionReward(true, {1.0});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ToString(), "F=1 n=0 P=1.000000 R_traj=1.000000 E=1.000000 R=2.500000");
}

}  // namespace
}  // namespace egca::credit
