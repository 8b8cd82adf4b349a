#include "egca/credit/token_credit.h"

#include <cmath>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace egca::credit {
namespace {

// A completion with prose and a Markdown fence around the code:
//   "Here:\n```python\ndef f(x):\n    return x+1\n```\n"
// The extracted code "def f(x):\n    return x+1\n" starts at completion byte 16
// ("Here:\n" = 6 bytes, "```python\n" = 10 bytes).
constexpr char kCompletion[] = "Here:\n```python\ndef f(x):\n    return x+1\n```\n";
constexpr uint32_t kCodeOffset = 16;

std::vector<TokenByteRange> Tokens() {
  return {
      {0, 4},    //  0 "Here"
      {4, 6},    //  1 ":\n"
      {6, 9},    //  2 "```"
      {9, 16},   //  3 "python\n"
      {16, 19},  //  4 "def"
      {19, 21},  //  5 " f"
      {21, 23},  //  6 "(x"
      {23, 26},  //  7 "):\n"
      {26, 36},  //  8 "    return"
      {36, 38},  //  9 " x"
      {38, 39},  // 10 "+"
      {39, 41},  // 11 "1\n"
      {41, 45},  // 12 "```\n"
      {45, 45},  // 13 end-of-text: zero width
  };
}

SourceSpan CodeSpan(uint32_t begin, uint32_t end) {
  SourceSpan s;
  s.begin_byte = begin;
  s.end_byte = end;
  s.begin = {1, static_cast<int32_t>(begin)};
  s.end = {1, static_cast<int32_t>(end)};
  return s;
}

CreditSample Sample(FailureMode mode, double advantage) {
  CreditSample s;
  s.mode = mode;
  s.advantage = advantage;
  s.token_bytes = Tokens();
  s.code_offset = kCodeOffset;
  return s;
}

double Sum(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return s;
}

TEST(TokenCredit, CorrectAndConstraintAreUniform) {
  for (FailureMode mode : {FailureMode::kCorrect, FailureMode::kConstraint}) {
    CreditSample s = Sample(mode, 0.7);
    s.earliest_divergence = CodeSpan(21, 24);  // ignored outside LOGIC
    StatusOr<TokenCredit> c = AssignTokenCredit(s, {});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->placement, CreditPlacement::kUniform);
    ASSERT_EQ(c->advantages.size(), 14u);
    for (double a : c->advantages) EXPECT_DOUBLE_EQ(a, 0.05);  // 0.7 / 14
  }
}

TEST(TokenCredit, LogicSpanCrossingTokenBoundariesTakesEveryTouchedToken) {
  // "x+1" is code bytes [21,24) -> completion [37,40). It starts inside token 9 " x" [36,38)
  // and ends inside token 11 "1\n" [39,41): tokens 9, 10, 11 each get -0.6 / 3 = -0.2.
  CreditSample s = Sample(FailureMode::kLogic, -0.6);
  s.earliest_divergence = CodeSpan(21, 24);
  TokenCreditStats stats;
  StatusOr<TokenCredit> c = AssignTokenCredit(s, {}, &stats);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->placement, CreditPlacement::kLocalized);
  EXPECT_EQ(c->span_token_begin, 9u);
  EXPECT_EQ(c->span_token_count, 3u);
  for (size_t t = 0; t < 14; ++t) {
    const double expected = (t >= 9 && t <= 11) ? -0.2 : 0.0;
    EXPECT_NEAR(c->advantages[t], expected, 1e-15) << "token " << t;
  }
  EXPECT_NEAR(Sum(c->advantages), -0.6, 1e-12);
  EXPECT_EQ(stats.localized, 1);
  EXPECT_EQ(stats.by_mode[static_cast<int>(FailureMode::kLogic)], 1);
}

TEST(TokenCredit, SyntaxUsesErrorSpan) {
  // Error at "f": code [4,5) -> completion [20,21) -> only token 5 " f" [19,21): a = -0.9 / 1.
  CreditSample s = Sample(FailureMode::kSyntax, -0.9);
  s.error_span = CodeSpan(4, 5);
  s.earliest_divergence = CodeSpan(21, 24);  // not used for SYNTAX
  StatusOr<TokenCredit> c = AssignTokenCredit(s, {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->span_token_count, 1u);
  for (size_t t = 0; t < 14; ++t) EXPECT_DOUBLE_EQ(c->advantages[t], t == 5 ? -0.9 : 0.0);
}

TEST(TokenCredit, TokenExactlyAdjacentToSpanDoesNotOverlap) {
  // code [5,7) "(x" -> completion [21,23) = token 6 exactly; tokens 5 [19,21) and 7 [23,26)
  // only touch its ends, and half-open ranges do not intersect there.
  const std::vector<uint32_t> on = TokensOverlappingSpan(Tokens(), kCodeOffset, CodeSpan(5, 7));
  ASSERT_EQ(on.size(), 1u);
  EXPECT_EQ(on[0], 6u);
}

TEST(TokenCredit, SoftMaskSharesTheRest) {
  // w = 0.8 on the 3 span tokens: -0.6 * 0.8 / 3 = -0.16 each;
  // the other 11 tokens share -0.6 * 0.2 = -0.12: -0.12 / 11 = -0.010909... each.
  CreditSample s = Sample(FailureMode::kLogic, -0.6);
  s.earliest_divergence = CodeSpan(21, 24);
  TokenCreditOptions o;
  o.soft_weight = 0.8;
  StatusOr<TokenCredit> c = AssignTokenCredit(s, o);
  ASSERT_TRUE(c.ok());
  for (size_t t = 0; t < 14; ++t) {
    const double expected = (t >= 9 && t <= 11) ? -0.16 : -0.12 / 11.0;
    EXPECT_NEAR(c->advantages[t], expected, 1e-15) << "token " << t;
  }
  EXPECT_NEAR(Sum(c->advantages), -0.6, 1e-12);
}

TEST(TokenCredit, SoftMaskOverWholeCompletionKeepsEverythingOnSpan) {
  // Span covers all 13 non-empty tokens; the zero-width token 13 is the only "rest" token,
  // and it does receive the (1 - w) share: 0.2 * 1.3 = 0.26 on it, 1.04 / 13 = 0.08 on the span.
  CreditSample s = Sample(FailureMode::kLogic, 1.3);
  s.code_offset = 0;
  s.earliest_divergence = CodeSpan(0, 45);
  TokenCreditOptions o;
  o.soft_weight = 0.8;
  StatusOr<TokenCredit> c = AssignTokenCredit(s, o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->span_token_count, 13u);
  EXPECT_NEAR(c->advantages[0], 0.08, 1e-15);
  EXPECT_NEAR(c->advantages[13], 0.26, 1e-15);
  // Without the zero-width token, the span is everything: all of A stays on it (1.3 / 13).
  s.token_bytes.pop_back();
  c = AssignTokenCredit(s, o);
  ASSERT_TRUE(c.ok());
  for (double a : c->advantages) EXPECT_NEAR(a, 0.1, 1e-15);
}

TEST(TokenCredit, UnrenormalizedMaskKeepsTheUniformShareOnTheSpan) {
  // 14 tokens, span tokens 9..11 (|S| = 3): each keeps -0.6 / 14 = -0.042857..., the other
  // 11 get 0; the sum is A * |S| / T = -0.6 * 3 / 14 = -0.128571..., not A.
  CreditSample s = Sample(FailureMode::kLogic, -0.6);
  s.earliest_divergence = CodeSpan(21, 24);
  TokenCreditOptions o;
  o.renormalize = false;
  TokenCreditStats stats;
  StatusOr<TokenCredit> c = AssignTokenCredit(s, o, &stats);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->placement, CreditPlacement::kLocalized);
  EXPECT_EQ(c->span_token_begin, 9u);
  EXPECT_EQ(c->span_token_count, 3u);
  for (size_t t = 0; t < 14; ++t) {
    EXPECT_NEAR(c->advantages[t], (t >= 9 && t <= 11) ? -0.6 / 14.0 : 0.0, 1e-15) << "token " << t;
  }
  EXPECT_NEAR(Sum(c->advantages), -0.6 * 3.0 / 14.0, 1e-15);
  EXPECT_EQ(stats.localized, 1);
  // The span over every non-empty token (13 of 14): 1.3 / 14 each, 0 on the zero-width
  // end token; sum 1.3 * 13 / 14.
  s.advantage = 1.3;
  s.code_offset = 0;
  s.earliest_divergence = CodeSpan(0, 45);
  c = AssignTokenCredit(s, o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->span_token_count, 13u);
  EXPECT_NEAR(c->advantages[0], 1.3 / 14.0, 1e-15);
  EXPECT_EQ(c->advantages[13], 0.0);
  EXPECT_NEAR(Sum(c->advantages), 1.3 * 13.0 / 14.0, 1e-14);
}

TEST(TokenCredit, UnrenormalizedMaskLeavesUniformSamplesAlone) {
  // CORRECT samples and target kUniform stay A / T on every token (sum A).
  TokenCreditOptions o;
  o.renormalize = false;
  StatusOr<TokenCredit> c = AssignTokenCredit(Sample(FailureMode::kCorrect, 0.7), o);
  ASSERT_TRUE(c.ok());
  for (double a : c->advantages) EXPECT_NEAR(a, 0.05, 1e-15);
  CreditSample s = Sample(FailureMode::kLogic, -0.7);
  s.earliest_divergence = CodeSpan(21, 24);
  o.target = LocalizationTarget::kUniform;
  c = AssignTokenCredit(s, o);
  ASSERT_TRUE(c.ok());
  for (double a : c->advantages) EXPECT_NEAR(a, -0.05, 1e-15);
}

TEST(TokenCredit, UnrenormalizedMaskRejectsASoftWeight) {
  CreditSample s = Sample(FailureMode::kLogic, -0.6);
  s.earliest_divergence = CodeSpan(21, 24);
  TokenCreditOptions o;
  o.renormalize = false;
  o.soft_weight = 0.8;
  StatusOr<TokenCredit> c = AssignTokenCredit(s, o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("renormalize=false needs soft_weight=1"), std::string::npos);
}

TEST(TokenCredit, EmptySpanFallsBackToUniformAndIsCounted) {
  CreditSample s = Sample(FailureMode::kLogic, 1.4);
  s.earliest_divergence = CodeSpan(21, 21);
  TokenCreditStats stats;
  StatusOr<TokenCredit> c = AssignTokenCredit(s, {}, &stats);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->placement, CreditPlacement::kFallback);
  EXPECT_EQ(c->fallback, FallbackReason::kEmptySpan);
  for (double a : c->advantages) EXPECT_DOUBLE_EQ(a, 0.1);  // 1.4 / 14
  EXPECT_EQ(stats.fallback_empty_span, 1);
  EXPECT_EQ(stats.fallbacks(), 1);
}

TEST(TokenCredit, SpanOutsideCompletionAndMissingSpanFallBack) {
  CreditSample s = Sample(FailureMode::kLogic, 1.4);
  s.earliest_divergence = CodeSpan(100, 110);  // completion [116,126): past every token
  TokenCreditStats stats;
  StatusOr<TokenCredit> c = AssignTokenCredit(s, {}, &stats);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->fallback, FallbackReason::kNoOverlap);
  s.earliest_divergence.reset();
  c = AssignTokenCredit(s, {}, &stats);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->fallback, FallbackReason::kMissingSpan);
  EXPECT_NEAR(Sum(c->advantages), 1.4, 1e-12);
  EXPECT_EQ(stats.fallback_no_overlap, 1);
  EXPECT_EQ(stats.fallback_missing_span, 1);
  EXPECT_EQ(stats.samples, 2);
}

// credit.min_confidence (issue 36). 14 tokens, A = -1.4, earliest on code [20,23) ->
// completion [36,39) -> tokens 9 " x" and 10 "+": localized -0.7 on each; below the
// threshold the sample is uniform, -1.4 / 14 = -0.1 on every token.
TEST(TokenCredit, LowConfidenceFallsBackToUniform) {
  CreditSample s = Sample(FailureMode::kLogic, -1.4);
  s.earliest_divergence = CodeSpan(20, 23);
  s.localization_confidence = 0.45;
  TokenCreditOptions o;
  o.min_confidence = 0.5;
  TokenCreditStats stats;
  StatusOr<TokenCredit> c = AssignTokenCredit(s, o, &stats);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->placement, CreditPlacement::kFallback);
  EXPECT_EQ(c->fallback, FallbackReason::kLowConfidence);
  EXPECT_STREQ(FallbackReasonName(c->fallback), "low_confidence");
  for (double a : c->advantages) EXPECT_NEAR(a, -0.1, 1e-12);
  EXPECT_EQ(stats.fallback_low_confidence, 1);
  EXPECT_EQ(stats.fallbacks(), 1);
  EXPECT_EQ(stats.localized, 0);
  // At the threshold, and with no confidence from the router: localized.
  for (std::optional<double> conf : {std::optional<double>(0.5), std::optional<double>()}) {
    s.localization_confidence = conf;
    c = AssignTokenCredit(s, o, &stats);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->placement, CreditPlacement::kLocalized);
    EXPECT_NEAR(c->advantages[9], -0.7, 1e-12);
    EXPECT_NEAR(c->advantages[10], -0.7, 1e-12);
    EXPECT_EQ(c->advantages[8], 0.0);
  }
  EXPECT_EQ(stats.localized, 2);
  // Default 0: never falls back, whatever the confidence.
  s.localization_confidence = 0.0;
  c = AssignTokenCredit(s, {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->placement, CreditPlacement::kLocalized);
  // Only LOGIC samples: a SYNTAX sample's error span is kept.
  CreditSample syn = Sample(FailureMode::kSyntax, -1.4);
  syn.error_span = CodeSpan(20, 23);
  syn.localization_confidence = 0.1;
  c = AssignTokenCredit(syn, o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->placement, CreditPlacement::kLocalized);
  // Bad thresholds and confidences are errors naming the option.
  for (double bad : {-0.1, 1.5, std::nan("")}) {
    o.min_confidence = bad;
    StatusOr<TokenCredit> e = AssignTokenCredit(s, o);
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.status().message().find("min_confidence"), std::string::npos);
  }
  s.localization_confidence = std::nan("");
  EXPECT_FALSE(AssignTokenCredit(s, {}).ok());
}

TEST(TokenCredit, SpanOnlyOnZeroWidthTokenFallsBack) {
  // code [29,35) -> completion [45,51): only the zero-width end token sits there.
  CreditSample s = Sample(FailureMode::kSyntax, -1.0);
  s.error_span = CodeSpan(29, 35);
  StatusOr<TokenCredit> c = AssignTokenCredit(s, {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->fallback, FallbackReason::kNoOverlap);
}

TEST(TokenCredit, LastDivergenceTarget) {
  // last divergence "return": code [14,20) -> completion [30,36) -> token 8 [26,36) only.
  CreditSample s = Sample(FailureMode::kLogic, -0.5);
  s.earliest_divergence = CodeSpan(21, 24);
  s.last_divergence = CodeSpan(14, 20);
  TokenCreditOptions o;
  o.target = LocalizationTarget::kLastDivergence;
  StatusOr<TokenCredit> c = AssignTokenCredit(s, o);
  ASSERT_TRUE(c.ok());
  for (size_t t = 0; t < 14; ++t) EXPECT_DOUBLE_EQ(c->advantages[t], t == 8 ? -0.5 : 0.0);
}

TEST(TokenCredit, UniformTargetIgnoresEverySpan) {
  TokenCreditOptions o;
  o.target = LocalizationTarget::kUniform;
  for (FailureMode mode : {FailureMode::kSyntax, FailureMode::kLogic}) {
    CreditSample s = Sample(mode, 2.8);
    s.error_span = CodeSpan(4, 5);
    s.earliest_divergence = CodeSpan(21, 24);
    StatusOr<TokenCredit> c = AssignTokenCredit(s, o);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->placement, CreditPlacement::kUniform);
    for (double a : c->advantages) EXPECT_DOUBLE_EQ(a, 0.2);  // 2.8 / 14
  }
}

TEST(TokenCredit, RandomBoundaryIsSeededAndCoversAllBoundaries) {
  CreditSample s = Sample(FailureMode::kLogic, 1.0);
  s.executed_boundaries = {CodeSpan(0, 9), CodeSpan(10, 20), CodeSpan(21, 24)};
  TokenCreditOptions o;
  o.target = LocalizationTarget::kRandomExecutedBoundary;
  int hits[3] = {0, 0, 0};
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    o.seed = seed;
    StatusOr<TokenCredit> a = AssignTokenCredit(s, o);
    StatusOr<TokenCredit> b = AssignTokenCredit(s, o);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->advantages, b->advantages);  // same seed, same draw
    ASSERT_TRUE(a->span.has_value());
    for (int k = 0; k < 3; ++k) {
      if (*a->span == s.executed_boundaries[k]) ++hits[k];
    }
  }
  // A fair draw puts 1000 +- ~26 (1 sigma) on each boundary.
  for (int k = 0; k < 3; ++k) {
    EXPECT_GT(hits[k], 850) << k;
    EXPECT_LT(hits[k], 1150) << k;
  }
  // A boundary the router already drew wins over the operator's own draw.
  s.random_boundary = CodeSpan(14, 20);
  StatusOr<TokenCredit> c = AssignTokenCredit(s, o);
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->advantages[8], 1.0);
}

TEST(TokenCredit, NoTokensIsCountedNotAnError) {
  CreditSample s;
  s.mode = FailureMode::kCorrect;
  s.advantage = 0.5;
  TokenCreditStats stats;
  StatusOr<TokenCredit> c = AssignTokenCredit(s, {}, &stats);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->advantages.empty());
  EXPECT_EQ(c->placement, CreditPlacement::kNoTokens);
  EXPECT_EQ(stats.no_tokens, 1);
}

TEST(TokenCredit, MalformedInputIsInvalidArgument) {
  CreditSample s = Sample(FailureMode::kCorrect, 1.0);
  s.token_bytes[3] = {12, 10};
  StatusOr<TokenCredit> c = AssignTokenCredit(s, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("token 3"), std::string::npos);

  s = Sample(FailureMode::kCorrect, std::nan(""));
  EXPECT_FALSE(AssignTokenCredit(s, {}).ok());

  s = Sample(FailureMode::kCorrect, 1.0);
  TokenCreditOptions o;
  o.soft_weight = 1.5;
  c = AssignTokenCredit(s, o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("soft_weight"), std::string::npos);

  std::vector<CreditSample> group = {Sample(FailureMode::kCorrect, 1.0),
                                     Sample(FailureMode::kCorrect, 1.0)};
  group[1].token_bytes[0] = {5, 1};
  StatusOr<std::vector<TokenCredit>> g = AssignGroupTokenCredit(group, {});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("sample 1"), std::string::npos);
}

TEST(TokenCredit, GroupStatsCountEveryPlacement) {
  std::vector<CreditSample> group;
  group.push_back(Sample(FailureMode::kCorrect, 0.5));
  group.push_back(Sample(FailureMode::kLogic, -0.5));
  group.back().earliest_divergence = CodeSpan(21, 24);
  group.push_back(Sample(FailureMode::kSyntax, -0.5));  // no error span: fallback
  group.push_back(Sample(FailureMode::kConstraint, 0.5));
  TokenCreditStats stats;
  StatusOr<std::vector<TokenCredit>> g = AssignGroupTokenCredit(group, {}, &stats);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(stats.samples, 4);
  EXPECT_EQ(stats.tokens, 56);  // 4 x 14
  EXPECT_EQ(stats.uniform, 2);
  EXPECT_EQ(stats.localized, 1);
  EXPECT_EQ(stats.fallback_missing_span, 1);
  EXPECT_EQ(stats.ToString(),
            "samples 4\ntokens 56\nmode.SYNTAX 1\nmode.CONSTRAINT 1\nmode.LOGIC 1\n"
            "mode.CORRECT 1\nuniform 2\nlocalized 1\nfallback.missing_span 1\n"
            "fallback.empty_span 0\nfallback.no_overlap 0\nfallback.low_confidence 0\n"
            "no_tokens 0\nwithheld 0\n"
            "logic_spanned 1\nlogic_spanned_positive 0\nadvantage_positive 1\n"
            "advantage_negative -1\nspan_credit_positive 0\nspan_credit_negative -0.5\n");
}

TEST(TokenCredit, NamesRoundTrip) {
  for (FailureMode m : {FailureMode::kSyntax, FailureMode::kConstraint, FailureMode::kLogic,
                        FailureMode::kCorrect}) {
    EXPECT_EQ(ParseFailureMode(FailureModeName(m)), m);
  }
  EXPECT_EQ(ParseFailureMode("logic"), std::nullopt);
  EXPECT_EQ(ParseLocalizationTarget("last"), LocalizationTarget::kLastDivergence);
  EXPECT_EQ(ParseLocalizationTarget("nope"), std::nullopt);
}

}  // namespace
}  // namespace egca::credit

namespace egca::credit {
namespace {

TEST(TokenCredit, IntoVariantResetsReusedResults) {
  // First a localized LOGIC sample, then a CORRECT one into the same result: no field of
  // the first may survive.
  CreditSample logic = Sample(FailureMode::kLogic, -0.6);
  logic.earliest_divergence = CodeSpan(21, 24);
  TokenCredit credit;
  ASSERT_TRUE(AssignTokenCreditInto(logic, {}, &credit).ok());
  EXPECT_EQ(credit.span_token_count, 3u);
  ASSERT_TRUE(AssignTokenCreditInto(Sample(FailureMode::kCorrect, 0.7), {}, &credit).ok());
  EXPECT_EQ(credit.placement, CreditPlacement::kUniform);
  EXPECT_EQ(credit.span_token_count, 0u);
  EXPECT_FALSE(credit.span.has_value());
  for (double a : credit.advantages) EXPECT_DOUBLE_EQ(a, 0.05);

  std::vector<TokenCredit> credits(5);  // more results than samples: resized down
  TokenCreditStats stats;
  ASSERT_TRUE(AssignGroupTokenCreditInto({logic, logic}, {}, &credits, &stats).ok());
  EXPECT_EQ(credits.size(), 2u);
  EXPECT_EQ(stats.localized, 2);
  EXPECT_DOUBLE_EQ(credits[1].advantages[10], -0.2);
}

TEST(TokenCredit, PackTokenAdvantagesPadsAndTruncates) {
  std::vector<TokenCredit> credits(3);
  credits[0].advantages = {0.5, -0.25};
  credits[1].advantages = {1.0, 2.0, 3.0, 4.0};  // longer than max_len: cut
  // credits[2]: no tokens, all padding
  const std::vector<float> packed = PackTokenAdvantages(credits, 3, -9.0f);
  EXPECT_EQ(packed,
            (std::vector<float>{0.5f, -0.25f, -9.0f, 1.0f, 2.0f, 3.0f, -9.0f, -9.0f, -9.0f}));
}

}  // namespace
}  // namespace egca::credit
