// The sign-aware token credit options (issue 37): positive_logic and syntax, every option x
// sign of A_i x failure mode, against hand-computed token advantages.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "egca/credit/token_credit.h"

namespace egca::credit {
namespace {

// Ten tokens of two bytes each, code_offset 0: token k is bytes [2k, 2k+2).
//   divergent / error span: bytes [6, 10) -> tokens 3, 4
//   cause span:             bytes [2, 10) -> tokens 1, 2, 3, 4
// A_i = +-0.6, T_i = 10, so
//   uniform          +-0.06 on every token        (0.6 / 10)
//   span             +-0.3 on tokens 3, 4          (0.6 / 2)
//   prefix (A > 0)   +0.2 on tokens 0, 1, 2        (0.6 / 3)
//   cause            +-0.15 on tokens 1..4         (0.6 / 4)
//   zero             0 everywhere
SourceSpan Bytes(uint32_t begin, uint32_t end) {
  SourceSpan s;
  s.begin_byte = begin;
  s.end_byte = end;
  return s;
}

CreditSample Sample(FailureMode mode, double advantage) {
  CreditSample s;
  s.mode = mode;
  s.advantage = advantage;
  for (uint32_t k = 0; k < 10; ++k) s.token_bytes.push_back({2 * k, 2 * k + 2});
  if (mode == FailureMode::kLogic) s.earliest_divergence = Bytes(6, 10);
  if (mode == FailureMode::kSyntax) {
    s.error_span = Bytes(6, 10);
    s.cause_span = Bytes(2, 10);
  }
  return s;
}

using V = std::vector<double>;
V Uniform(double a) { return V(10, a * 0.1); }
V On(std::vector<int> tokens, double each) {
  V v(10, 0.0);
  for (int t : tokens) v[static_cast<size_t>(t)] = each;
  return v;
}

void ExpectTokens(const V& got, const V& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t t = 0; t < want.size(); ++t) EXPECT_NEAR(got[t], want[t], 1e-12) << what << " token " << t;
}

// What the table says each combination gives (written out, not derived from the
// operator's code).
V Expected(FailureMode mode, double a, PositiveLogicCredit pl, SyntaxCredit sx) {
  switch (mode) {
    case FailureMode::kCorrect:
    case FailureMode::kConstraint:
      return Uniform(a);
    case FailureMode::kLogic:
      if (a < 0) return On({3, 4}, a / 2);  // negative: always the span
      switch (pl) {
        case PositiveLogicCredit::kSpan:
          return On({3, 4}, 0.3);
        case PositiveLogicCredit::kUniform:
          return Uniform(a);
        case PositiveLogicCredit::kPrefix:
          return On({0, 1, 2}, 0.2);
        case PositiveLogicCredit::kZero:
          return V(10, 0.0);
      }
      break;
    case FailureMode::kSyntax:
      switch (sx) {
        case SyntaxCredit::kSpan:
          return On({3, 4}, a / 2);
        case SyntaxCredit::kUniform:
          return Uniform(a);
        case SyntaxCredit::kCause:
          return On({1, 2, 3, 4}, a / 4);
      }
      break;
  }
  return {};
}

TEST(SignAwareCredit, EveryOptionSignAndModeByHand) {
  int cases = 0;
  for (FailureMode mode : {FailureMode::kSyntax, FailureMode::kConstraint, FailureMode::kLogic,
                           FailureMode::kCorrect}) {
    for (double a : {0.6, -0.6}) {
      for (PositiveLogicCredit pl : {PositiveLogicCredit::kSpan, PositiveLogicCredit::kUniform,
                                     PositiveLogicCredit::kPrefix, PositiveLogicCredit::kZero}) {
        for (SyntaxCredit sx : {SyntaxCredit::kSpan, SyntaxCredit::kUniform, SyntaxCredit::kCause}) {
          TokenCreditOptions o;
          o.target = LocalizationTarget::kEarliestDivergence;
          o.positive_logic = pl;
          o.syntax = sx;
          const std::string what = std::string(FailureModeName(mode)) + " A=" + std::to_string(a) +
                                   " positive_logic=" + PositiveLogicCreditName(pl) +
                                   " syntax=" + SyntaxCreditName(sx);
          StatusOr<TokenCredit> c = AssignTokenCredit(Sample(mode, a), o);
          ASSERT_TRUE(c.ok()) << what;
          ExpectTokens(c->advantages, Expected(mode, a, pl, sx), what);
          // Under target uniform every option is plain GRPO.
          o.target = LocalizationTarget::kUniform;
          StatusOr<TokenCredit> u = AssignTokenCredit(Sample(mode, a), o);
          ASSERT_TRUE(u.ok()) << what;
          ExpectTokens(u->advantages, Uniform(a), what + " target=uniform");
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 4 * 2 * 4 * 3);
}

TEST(SignAwareCredit, PlacementsAndSpanCredit) {
  TokenCreditOptions o;
  o.positive_logic = PositiveLogicCredit::kZero;
  StatusOr<TokenCredit> zero = AssignTokenCredit(Sample(FailureMode::kLogic, 0.6), o);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->placement, CreditPlacement::kWithheld);
  EXPECT_TRUE(zero->span_found);
  EXPECT_EQ(zero->span_token_count, 2u);  // the divergent span is still reported
  EXPECT_DOUBLE_EQ(zero->span_credit, 0.0);

  o.positive_logic = PositiveLogicCredit::kUniform;
  StatusOr<TokenCredit> uni = AssignTokenCredit(Sample(FailureMode::kLogic, 0.6), o);
  ASSERT_TRUE(uni.ok());
  EXPECT_EQ(uni->placement, CreditPlacement::kUniform);
  EXPECT_NEAR(uni->span_credit, 0.12, 1e-12);  // 2 span tokens x 0.06

  o.positive_logic = PositiveLogicCredit::kPrefix;
  StatusOr<TokenCredit> pre = AssignTokenCredit(Sample(FailureMode::kLogic, 0.6), o);
  ASSERT_TRUE(pre.ok());
  EXPECT_EQ(pre->placement, CreditPlacement::kLocalized);
  EXPECT_EQ(pre->span_token_begin, 3u);  // the divergent span, not the prefix
  EXPECT_DOUBLE_EQ(pre->span_credit, 0.0);
}

TEST(SignAwareCredit, PrefixWithNothingBeforeTheSpanIsWithheld) {
  CreditSample s = Sample(FailureMode::kLogic, 0.6);
  s.earliest_divergence = Bytes(0, 3);  // tokens 0, 1
  TokenCreditOptions o;
  o.positive_logic = PositiveLogicCredit::kPrefix;
  TokenCreditStats stats;
  StatusOr<TokenCredit> c = AssignTokenCredit(s, o, &stats);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->placement, CreditPlacement::kWithheld);
  ExpectTokens(c->advantages, V(10, 0.0), "withheld");
  EXPECT_EQ(stats.withheld, 1);
}

TEST(SignAwareCredit, PrefixAndCauseUnderSoftWeightAndNoRenormalization) {
  TokenCreditOptions o;
  o.positive_logic = PositiveLogicCredit::kPrefix;
  o.syntax = SyntaxCredit::kCause;
  o.renormalize = false;  // A_i / T_i = 0.06 on the chosen tokens, 0 elsewhere
  StatusOr<TokenCredit> p = AssignTokenCredit(Sample(FailureMode::kLogic, 0.6), o);
  ASSERT_TRUE(p.ok());
  ExpectTokens(p->advantages, On({0, 1, 2}, 0.06), "prefix, not renormalized");
  StatusOr<TokenCredit> c = AssignTokenCredit(Sample(FailureMode::kSyntax, -0.6), o);
  ASSERT_TRUE(c.ok());
  ExpectTokens(c->advantages, On({1, 2, 3, 4}, -0.06), "cause, not renormalized");

  o.renormalize = true;
  o.soft_weight = 0.5;  // 0.5 x 0.6 / 3 = 0.1 on the prefix, 0.3 / 7 on the other 7 tokens
  StatusOr<TokenCredit> s = AssignTokenCredit(Sample(FailureMode::kLogic, 0.6), o);
  ASSERT_TRUE(s.ok());
  V want(10, 0.3 / 7);
  want[0] = want[1] = want[2] = 0.1;
  ExpectTokens(s->advantages, want, "prefix, soft weight 0.5");
}

TEST(SignAwareCredit, CauseWithoutACauseSpanUsesTheErrorSpan) {
  CreditSample s = Sample(FailureMode::kSyntax, -0.6);
  s.cause_span.reset();
  TokenCreditOptions o;
  o.syntax = SyntaxCredit::kCause;
  StatusOr<TokenCredit> c = AssignTokenCredit(s, o);
  ASSERT_TRUE(c.ok());
  ExpectTokens(c->advantages, On({3, 4}, -0.3), "cause falls back to the error span");
}

TEST(SignAwareCredit, StatsCountPositiveLocalizedLogicAndSpanMassBySign) {
  // Group: LOGIC +0.6, LOGIC -0.2, SYNTAX -0.4, CORRECT 0 (sums to 0 as GRPO's would).
  std::vector<CreditSample> g = {Sample(FailureMode::kLogic, 0.6), Sample(FailureMode::kLogic, -0.2),
                                 Sample(FailureMode::kSyntax, -0.4),
                                 Sample(FailureMode::kCorrect, 0.0)};
  TokenCreditOptions o;  // the paper's operator
  TokenCreditStats stats;
  ASSERT_TRUE(AssignGroupTokenCredit(g, o, &stats).ok());
  EXPECT_EQ(stats.logic_spanned, 2);
  EXPECT_EQ(stats.logic_spanned_positive, 1);
  EXPECT_DOUBLE_EQ(stats.advantage_positive, 0.6);
  EXPECT_DOUBLE_EQ(stats.advantage_negative, -0.6);
  EXPECT_NEAR(stats.span_credit_positive, 0.6, 1e-12);   // all of it on the bug
  EXPECT_NEAR(stats.span_credit_negative, -0.6, 1e-12);  // -0.2 and -0.4 on their spans

  o.positive_logic = PositiveLogicCredit::kUniform;
  o.syntax = SyntaxCredit::kUniform;
  TokenCreditStats u;
  ASSERT_TRUE(AssignGroupTokenCredit(g, o, &u).ok());
  EXPECT_EQ(u.logic_spanned_positive, 1);                  // counted whatever the option
  EXPECT_NEAR(u.span_credit_positive, 0.12, 1e-12);        // 2 of 10 tokens x 0.06
  EXPECT_NEAR(u.span_credit_negative, -0.2, 1e-12);        // LOGIC -0.2 on its span; SYNTAX uniform: no span
}

TEST(SignAwareCredit, NamesRoundTripAndRejectOthers) {
  for (PositiveLogicCredit c : {PositiveLogicCredit::kSpan, PositiveLogicCredit::kUniform,
                                PositiveLogicCredit::kPrefix, PositiveLogicCredit::kZero}) {
    EXPECT_EQ(ParsePositiveLogicCredit(PositiveLogicCreditName(c)), c);
  }
  for (SyntaxCredit c : {SyntaxCredit::kSpan, SyntaxCredit::kUniform, SyntaxCredit::kCause}) {
    EXPECT_EQ(ParseSyntaxCredit(SyntaxCreditName(c)), c);
  }
  EXPECT_FALSE(ParsePositiveLogicCredit("Span").has_value());
  EXPECT_FALSE(ParsePositiveLogicCredit("cause").has_value());
  EXPECT_FALSE(ParseSyntaxCredit("prefix").has_value());
  EXPECT_FALSE(ParseSyntaxCredit("").has_value());
  EXPECT_STREQ(CreditPlacementName(CreditPlacement::kWithheld), "withheld");
}

}  // namespace
}  // namespace egca::credit
