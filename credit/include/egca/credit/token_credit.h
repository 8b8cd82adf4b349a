// The EGCA token-level advantage operator (EGCA eq. 6) and its ablation targets.
//
// For sample i with T_i completion tokens and scalar advantage A_i:
//   CORRECT, CONSTRAINT: a_{i,t} = A_i / T_i for every t;
//   SYNTAX:              a_{i,t} = A_i / |T_err| on the tokens overlapping the interpreter's
//                        error span, 0 elsewhere;
//   LOGIC:               a_{i,t} = A_i / |T_k*| on the tokens overlapping the divergence
//                        block's span, 0 elsewhere (downstream tokens are masked).
// In every mode sum_t a_{i,t} = A_i. A span that maps to no token falls back to uniform
// credit, and the fallback is counted in TokenCreditStats.
//
// Sign-aware variants (issue 37; the paper's operator is positive_logic = kSpan, syntax =
// kSpan). Under a partial-credit reward a LOGIC sample whose group-mates score lower has
// A_i > 0, and the paper's operator puts all of it on its divergent span: the bug.
//   positive_logic (LOGIC samples with A_i > 0 and a span): kSpan as above; kUniform
//     A_i / T_i on every token (as if CORRECT); kPrefix A_i / |P| on the tokens P before
//     the span's first token (the part that agreed with the reference), 0 elsewhere;
//     kZero 0 on every token (the sample teaches nothing).
//   syntax (SYNTAX samples): kSpan the raising statement (error_span); kUniform A_i / T_i;
//     kCause the cause span the router gives (cause_span: for a name error the span from
//     the name's binding sites to its use, else the raising statement).
//
// Byte conventions. Token byte ranges are offsets into the *completion* text (what the
// tokenizer reports for the generated tokens). Spans (core SourceSpan) are byte offsets into
// the *extracted code* (what the tracer and router saw), which starts at `code_offset`
// inside the completion (after any prose or Markdown fence). A token overlaps a span when
// their byte ranges intersect; a span crossing token boundaries takes every token it touches.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/span.h"
#include "egca/core/status.h"

namespace egca::credit {

// The router's failure modes (EGCA eq. 5), in the router's order and spelling.
enum class FailureMode { kSyntax, kConstraint, kLogic, kCorrect };

// "SYNTAX", "CONSTRAINT", "LOGIC", "CORRECT".
const char* FailureModeName(FailureMode mode);
// Inverse of FailureModeName (case-sensitive); nullopt for anything else.
std::optional<FailureMode> ParseFailureMode(std::string_view name);

// Which span a LOGIC sample's credit goes to (EGCA Table 6 ablations). SYNTAX samples always
// use the interpreter's error span, except under kUniform, which makes every mode uniform.
enum class LocalizationTarget {
  kEarliestDivergence,  // EGCA default
  kLastDivergence,
  kRandomExecutedBoundary,  // seeded draw among the executed boundaries
  kUniform,                 // no localization: w = 1 / T_i (plain GRPO)
};

const char* LocalizationTargetName(LocalizationTarget target);
std::optional<LocalizationTarget> ParseLocalizationTarget(std::string_view name);

// Where a LOGIC sample's *positive* advantage goes (issue 37). Negative advantages always go
// to the target's span.
enum class PositiveLogicCredit {
  kSpan,     // the target's span, like a negative advantage (EGCA eq. 6)
  kUniform,  // A_i / T_i on every token, like a CORRECT sample
  kPrefix,   // only on the tokens before the span (the agreeing prefix)
  kZero,     // nowhere: every token 0
};
// "span", "uniform", "prefix", "zero"; Parse* is the inverse (nullopt for anything else).
const char* PositiveLogicCreditName(PositiveLogicCredit credit);
std::optional<PositiveLogicCredit> ParsePositiveLogicCredit(std::string_view name);

// Where a SYNTAX sample's advantage goes (issue 37).
enum class SyntaxCredit {
  kSpan,     // the raising / rejected statement (error_span; EGCA eq. 6)
  kUniform,  // A_i / T_i on every token
  kCause,    // cause_span (name errors: binding sites through the use); error_span if absent
};
// "span", "uniform", "cause".
const char* SyntaxCreditName(SyntaxCredit credit);
std::optional<SyntaxCredit> ParseSyntaxCredit(std::string_view name);

struct TokenCreditOptions {
  LocalizationTarget target = LocalizationTarget::kEarliestDivergence;
  // Share of A_i placed on the localized span; the other 1 - soft_weight is shared evenly by
  // the tokens outside it. 1 = the paper's hard mask. Must be in [0, 1]. When the span covers
  // every token the whole A_i stays on the span.
  double soft_weight = 1.0;
  // false: mask without renormalizing. A localized sample's span tokens keep the uniform
  // share A_i / T_i and every other token gets 0, so its token advantages sum to
  // A_i * |S| / T_i (|S| span tokens) instead of A_i: the placement of the paper's operator
  // without its T_i / |S| larger step on the span. Samples credited uniformly (by mode, by
  // target kUniform, or by fallback) are unchanged. Requires soft_weight = 1.
  bool renormalize = true;
  // Seed of kRandomExecutedBoundary; the draw also mixes in CreditSample::sample_index, so a
  // batch is reproducible and samples draw independently.
  uint64_t seed = 0;
  // Sign-aware placement (issue 37); the defaults are the paper's operator. Both are ignored
  // under target kUniform (every mode uniform).
  PositiveLogicCredit positive_logic = PositiveLogicCredit::kSpan;
  SyntaxCredit syntax = SyntaxCredit::kSpan;
  // Issue 36. A LOGIC sample whose localization_confidence is below this gets uniform
  // credit (fallback kLowConfidence) whatever the target, so an ablation target is
  // localized on the same samples as earliest. 0 = never (every confidence is >= 0). Must
  // be in [0, 1].
  double min_confidence = 0.0;
};

// [begin, end) byte range of one token in the completion text. Zero-width ranges (special
// tokens such as end-of-text) never overlap a span.
struct TokenByteRange {
  uint32_t begin = 0;
  uint32_t end = 0;
};

// Everything the operator needs about one sample. Spans are byte ranges into the extracted
// code; the router fills the ones it has.
struct CreditSample {
  FailureMode mode = FailureMode::kCorrect;
  double advantage = 0.0;                         // A_i (from GroupAdvantages)
  std::vector<TokenByteRange> token_bytes;        // [T_i] byte ranges into the completion
  uint32_t code_offset = 0;                       // completion byte where the extracted code starts
  std::optional<SourceSpan> error_span;           // SYNTAX: interpreter error location
  std::optional<SourceSpan> cause_span;           // SYNTAX: the router's cause (SyntaxCredit::kCause)
  std::optional<SourceSpan> earliest_divergence;  // LOGIC: block of k* (EGCA default)
  std::optional<SourceSpan> last_divergence;      // LOGIC: last diverging block (ablation)
  // LOGIC, kRandomExecutedBoundary: a boundary the router already drew; when absent the
  // operator draws one of `executed_boundaries` with the options' seed.
  std::optional<SourceSpan> random_boundary;
  std::vector<SourceSpan> executed_boundaries;
  uint64_t sample_index = 0;  // position in the batch; only feeds the seeded draw
  // LOGIC: the router's confidence in [0, 1] that the earliest divergence's span is the
  // cause (RouteResult::localization_confidence); absent when the router gave none, which
  // never triggers TokenCreditOptions::min_confidence.
  std::optional<double> localization_confidence;
};

// How a sample's credit was placed.
enum class CreditPlacement {
  kUniform,    // by mode (CORRECT/CONSTRAINT) or by target (kUniform)
  kLocalized,  // on the span's tokens
  kFallback,   // a span was wanted but gave no token: uniform instead
  kNoTokens,   // T_i = 0: nothing to credit (the advantage is lost; counted)
  kWithheld,   // a positive LOGIC advantage given to no token (positive_logic kZero, or
               // kPrefix with no token before the span): every a_{i,t} = 0
};

// Why a localized sample fell back to uniform.
enum class FallbackReason {
  kNone,
  kMissingSpan,  // the router supplied no span for the selected target
  kEmptySpan,    // the span is empty (end <= begin)
  kNoOverlap,    // the span overlaps no token (outside the completion, zero-width tokens)
  kLowConfidence,  // LOGIC: localization_confidence < TokenCreditOptions::min_confidence
};

const char* CreditPlacementName(CreditPlacement placement);
const char* FallbackReasonName(FallbackReason reason);

struct TokenCredit {
  std::vector<double> advantages;  // [T_i] a_{i,t}; sums to A_i unless T_i = 0, kWithheld
                                   // (0), or the options do not renormalize (A_i * |S| / T_i)
  CreditPlacement placement = CreditPlacement::kUniform;
  FallbackReason fallback = FallbackReason::kNone;
  std::optional<SourceSpan> span;  // the span used (code bytes), when one was selected
  uint32_t span_token_begin = 0;   // first token on the span (kLocalized)
  uint32_t span_token_count = 0;   // |T_err| or |T_k*| (kLocalized)
  // The selected span gave tokens (the sample is localized before any sign handling): what
  // the "share of localized LOGIC samples with A > 0" counts.
  bool span_found = false;
  // sum of a_{i,t} over the span's tokens (0 unless span_found): the credit the operator put
  // on the divergent / error span.
  double span_credit = 0.0;
};

// Counters over the samples given to one call (or accumulated over several).
struct TokenCreditStats {
  int64_t samples = 0;
  int64_t tokens = 0;
  int64_t by_mode[4] = {0, 0, 0, 0};  // indexed by FailureMode
  int64_t uniform = 0;
  int64_t localized = 0;
  int64_t fallback_missing_span = 0;
  int64_t fallback_empty_span = 0;
  int64_t fallback_no_overlap = 0;
  int64_t fallback_low_confidence = 0;
  int64_t no_tokens = 0;
  int64_t withheld = 0;  // CreditPlacement::kWithheld
  // Issue 37. LOGIC samples whose span gave tokens, and those of them with A_i > 0.
  int64_t logic_spanned = 0;
  int64_t logic_spanned_positive = 0;
  // By the sign of A_i: sum of A_i, and sum of the credit placed on span tokens.
  double advantage_positive = 0.0;   // sum of A_i > 0
  double advantage_negative = 0.0;   // sum of A_i < 0 (<= 0)
  double span_credit_positive = 0.0;  // sum over A_i > 0 of TokenCredit::span_credit
  double span_credit_negative = 0.0;  // sum over A_i < 0

  int64_t fallbacks() const {
    return fallback_missing_span + fallback_empty_span + fallback_no_overlap +
           fallback_low_confidence;
  }
  void Merge(const TokenCreditStats& other);
  // One line per counter, "name value", deterministic order.
  std::string ToString() const;
};

// The tokens overlapping `span` (code bytes) as a contiguous index range [first, first+count)
// when token ranges are sorted; in general, the sorted list of overlapping token indices.
std::vector<uint32_t> TokensOverlappingSpan(const std::vector<TokenByteRange>& token_bytes,
                                            uint32_t code_offset, const SourceSpan& span);

// Token advantages for one sample. Errors (INVALID_ARGUMENT) for malformed input only: a
// token range with end < begin, a non-finite advantage, soft_weight outside [0, 1], or
// renormalize = false with soft_weight != 1.
// `stats` (optional, borrowed) is incremented.
StatusOr<TokenCredit> AssignTokenCredit(const CreditSample& sample,
                                        const TokenCreditOptions& options,
                                        TokenCreditStats* stats = nullptr);

// AssignTokenCredit for every sample of a group, in order. The first error names the sample.
StatusOr<std::vector<TokenCredit>> AssignGroupTokenCredit(const std::vector<CreditSample>& samples,
                                                          const TokenCreditOptions& options,
                                                          TokenCreditStats* stats = nullptr);

// Hot-path variants writing into caller-owned results whose advantage buffers are reused
// across training steps (a fresh 8,192-token buffer per sample per step costs more in page
// faults than the operator itself). `out` / `credits` are overwritten; on error the
// contents are unspecified. Stats are only incremented on success.
Status AssignTokenCreditInto(const CreditSample& sample, const TokenCreditOptions& options,
                             TokenCredit* out, TokenCreditStats* stats = nullptr);
Status AssignGroupTokenCreditInto(const std::vector<CreditSample>& samples,
                                  const TokenCreditOptions& options,
                                  std::vector<TokenCredit>* credits,
                                  TokenCreditStats* stats = nullptr);

// Token advantages of a group as one row-major [B, max_len] float buffer (B = credits.size()),
// the layout of the trainer's advantage tensor: row i holds credits[i].advantages, cut at
// max_len and padded with `pad`. Narrowing to float happens here and nowhere else.
std::vector<float> PackTokenAdvantages(const std::vector<TokenCredit>& credits, size_t max_len,
                                       float pad = 0.0f);

// Deterministic text dump of one sample's credit map: a header (mode, A_i, placement, span,
// sum) and one line per token: index, byte range, the token's text (escaped), a_{i,t}.
// `completion` is the completion text the token ranges index into.
std::string DumpCreditMap(const CreditSample& sample, const TokenCredit& credit,
                          std::string_view completion);

}  // namespace egca::credit
