// The cancellation diagnostic (issue 23) on hand-made groups with answers computed by hand.
#include "egca/trainer/rl/cancellation.h"

#include <gtest/gtest.h>

namespace egca::trainer {
namespace {

// Two samples of 4 tokens, A = (+0.5, -0.5): a correct program [1 2 3 4] and a near-miss
// [1 2 9 4] whose divergent statement is token 9. a_{i,t} = +-0.125.
//   trie: (1) 0.125 - 0.125 = 0, (1 2) 0, then (3) +0.125, (3 4) +0.125, (9) -0.125 [divergent],
//   (9 4) -0.125 (the shared last token does not cancel: its context differs).
//   net = 0.5, on the divergent statement 0.125 -> share 0.25; gross = |0.5| + |-0.5| = 1;
//   divergent tokens 1 of 8 -> token share 0.125.
TEST(Cancellation, SharedPrefixCancelsByHand) {
  const CancellationSums s = GroupCancellation(
      {{{1, 2, 3, 4}, 0.5, {}}, {{1, 2, 9, 4}, -0.5, {false, false, true, false}}});
  EXPECT_NEAR(s.net, 0.5, 1e-12);
  EXPECT_NEAR(s.net_divergent, 0.125, 1e-12);
  EXPECT_NEAR(s.divergent_share(), 0.25, 1e-12);
  EXPECT_NEAR(s.gross, 1.0, 1e-12);
  EXPECT_NEAR(s.net_over_gross(), 0.5, 1e-12);
  EXPECT_EQ(s.tokens, 8);
  EXPECT_EQ(s.divergent_tokens, 1);
  EXPECT_NEAR(s.divergent_token_share(), 0.125, 1e-12);
}

// Unequal lengths (mean-centred A = 2/3, -1/3, -1/3), two near-misses sharing the wrong token:
//   s0 [5 6 7] a = 2/9; s1 [5 6 8] a = -1/9 (8 divergent); s2 [5 6 8 9] a = -1/12 (8 divergent).
//   (5) = (5 6) = 2/9 - 1/9 - 1/12 = 1/36; (7) 8/36; (8) -1/9 - 1/12 = -7/36 [divergent];
//   (8 9) -3/36. net = (1 + 1 + 8 + 7 + 3)/36 = 20/36, divergent 7/36 -> share 0.35.
//   gross 4/3; tokens 10, divergent 2. A route error (A = 0) and an empty sample take no part.
TEST(Cancellation, UnequalLengthsLeaveAResidueOnTheSharedPrefix) {
  const CancellationSums s =
      GroupCancellation({{{5, 6, 7}, 2.0 / 3, {}},
                         {{5, 6, 8}, -1.0 / 3, {false, false, true}},
                         {{5, 6, 8, 9}, -1.0 / 3, {false, false, true, false}},
                         {{5, 6, 8}, 0.0, {true, true, true}},
                         {{}, 1.0, {}}});
  EXPECT_NEAR(s.net, 20.0 / 36, 1e-12);
  EXPECT_NEAR(s.net_divergent, 7.0 / 36, 1e-12);
  EXPECT_NEAR(s.divergent_share(), 0.35, 1e-12);
  EXPECT_NEAR(s.gross, 4.0 / 3, 1e-12);
  EXPECT_EQ(s.tokens, 10);
  EXPECT_EQ(s.divergent_tokens, 2);
  // Pooling two groups adds numerators and denominators.
  CancellationSums both = s;
  both.Add(GroupCancellation(
      {{{1, 2, 3, 4}, 0.5, {}}, {{1, 2, 9, 4}, -0.5, {false, false, true, false}}}));
  EXPECT_NEAR(both.divergent_share(), (7.0 / 36 + 0.125) / (20.0 / 36 + 0.5), 1e-12);
}

// Identical samples cancel completely (equal lengths, advantages summing to 0): nothing is left.
TEST(Cancellation, IdenticalSamplesCancelCompletely) {
  const CancellationSums s = GroupCancellation({{{1, 2, 3}, 0.25, {}}, {{1, 2, 3}, -0.25, {}}});
  EXPECT_NEAR(s.net, 0.0, 1e-15);
  EXPECT_EQ(s.divergent_share(), 0.0);
  EXPECT_NEAR(s.net_over_gross(), 0.0, 1e-15);
}

// Tokens [0,3) [3,5) [5,9) [9,9): a span [4, 6) overlaps tokens 1 and 2; other modes or no
// span mark nothing.
TEST(Cancellation, DivergentTokenMaskFromTheSpan) {
  const std::vector<credit::TokenByteRange> bytes = {{0, 3}, {3, 5}, {5, 9}, {9, 12}};
  SourceSpan span;
  span.begin_byte = 4;
  span.end_byte = 6;
  EXPECT_EQ(DivergentTokenMask(bytes, span, true), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(DivergentTokenMask(bytes, span, false), (std::vector<bool>(4, false)));
  EXPECT_EQ(DivergentTokenMask(bytes, std::nullopt, true), (std::vector<bool>(4, false)));
}

}  // namespace
}  // namespace egca::trainer
