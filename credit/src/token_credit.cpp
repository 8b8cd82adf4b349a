#include "egca/credit/token_credit.h"

#include "egca/core/mix.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace egca::credit {
namespace {

// The span the options select for `sample`, or nullptr when the mode is not localized.
// Sets *wanted when the mode/target asks for a span (so a missing one is a fallback).
const SourceSpan* SelectSpan(const CreditSample& sample, const TokenCreditOptions& options,
                             bool* wanted, SourceSpan* scratch) {
  *wanted = false;
  if (options.target == LocalizationTarget::kUniform) return nullptr;
  if (sample.mode == FailureMode::kSyntax) {
    if (options.syntax == SyntaxCredit::kUniform) return nullptr;
    *wanted = true;
    if (options.syntax == SyntaxCredit::kCause && sample.cause_span) return &*sample.cause_span;
    return sample.error_span ? &*sample.error_span : nullptr;
  }
  if (sample.mode != FailureMode::kLogic) return nullptr;
  *wanted = true;
  switch (options.target) {
    case LocalizationTarget::kEarliestDivergence:
      return sample.earliest_divergence ? &*sample.earliest_divergence : nullptr;
    case LocalizationTarget::kLastDivergence:
      return sample.last_divergence ? &*sample.last_divergence : nullptr;
    case LocalizationTarget::kRandomExecutedBoundary: {
      if (sample.random_boundary) return &*sample.random_boundary;
      if (sample.executed_boundaries.empty()) return nullptr;
      const uint64_t draw = SplitMix64(options.seed ^ SplitMix64(sample.sample_index));
      *scratch = sample.executed_boundaries[draw % sample.executed_boundaries.size()];
      return scratch;
    }
    case LocalizationTarget::kUniform:
      break;
  }
  return nullptr;
}

void FillUniform(double advantage, size_t tokens, TokenCredit* credit) {
  credit->advantages.assign(tokens, advantage / static_cast<double>(tokens));
}

// A_i placed on the token set `on` (non-empty, sorted indices) under the options' weighting:
// renormalized, soft_weight w of A_i on `on` and 1 - w shared by the other tokens (all of
// A_i on `on` when it is every token); not renormalized, A_i / T_i on each token of `on`.
void FillOnTokens(double advantage, size_t tokens, const std::vector<uint32_t>& on,
                  const TokenCreditOptions& options, TokenCredit* credit) {
  if (!options.renormalize) {
    credit->advantages.assign(tokens, 0.0);
    const double each = advantage / static_cast<double>(tokens);
    for (uint32_t t : on) credit->advantages[t] = each;
    return;
  }
  const size_t rest = tokens - on.size();
  const double share = rest == 0 ? 1.0 : options.soft_weight;
  const double each = advantage * share / static_cast<double>(on.size());
  const double off =
      rest > 0 && share < 1.0 ? advantage * (1.0 - share) / static_cast<double>(rest) : 0.0;
  credit->advantages.assign(tokens, off);
  for (uint32_t t : on) credit->advantages[t] = each;
}

// Tokens overlapping [begin, end) (completion bytes). When token ranges are sorted (begins
// and ends non-decreasing, the usual tokenizer output) the overlapping tokens are one
// contiguous run found by binary search; otherwise every token is tested.
std::vector<uint32_t> Overlapping(const std::vector<TokenByteRange>& tokens, uint64_t begin,
                                  uint64_t end, bool sorted) {
  std::vector<uint32_t> out;
  if (end <= begin) return out;
  size_t first = 0;
  if (sorted) {
    // First token whose end is past `begin`; tokens before it end at or before the span.
    size_t lo = 0;
    size_t hi = tokens.size();
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (tokens[mid].end <= begin) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    first = lo;
  }
  for (size_t t = first; t < tokens.size(); ++t) {
    const TokenByteRange& tok = tokens[t];
    if (sorted && tok.begin >= end) break;  // every later token starts at or after `end`
    if (tok.end <= tok.begin) continue;     // zero-width special token
    if (tok.begin < end && begin < tok.end) out.push_back(static_cast<uint32_t>(t));
  }
  return out;
}

std::string EscapeToken(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

}  // namespace

const char* FailureModeName(FailureMode mode) {
  switch (mode) {
    case FailureMode::kSyntax:
      return "SYNTAX";
    case FailureMode::kConstraint:
      return "CONSTRAINT";
    case FailureMode::kLogic:
      return "LOGIC";
    case FailureMode::kCorrect:
      return "CORRECT";
  }
  return "?";
}

std::optional<FailureMode> ParseFailureMode(std::string_view name) {
  for (FailureMode m : {FailureMode::kSyntax, FailureMode::kConstraint, FailureMode::kLogic,
                        FailureMode::kCorrect}) {
    if (name == FailureModeName(m)) return m;
  }
  return std::nullopt;
}

const char* LocalizationTargetName(LocalizationTarget target) {
  switch (target) {
    case LocalizationTarget::kEarliestDivergence:
      return "earliest";
    case LocalizationTarget::kLastDivergence:
      return "last";
    case LocalizationTarget::kRandomExecutedBoundary:
      return "random";
    case LocalizationTarget::kUniform:
      return "uniform";
  }
  return "?";
}

std::optional<LocalizationTarget> ParseLocalizationTarget(std::string_view name) {
  for (LocalizationTarget t :
       {LocalizationTarget::kEarliestDivergence, LocalizationTarget::kLastDivergence,
        LocalizationTarget::kRandomExecutedBoundary, LocalizationTarget::kUniform}) {
    if (name == LocalizationTargetName(t)) return t;
  }
  return std::nullopt;
}

const char* PositiveLogicCreditName(PositiveLogicCredit credit) {
  switch (credit) {
    case PositiveLogicCredit::kSpan:
      return "span";
    case PositiveLogicCredit::kUniform:
      return "uniform";
    case PositiveLogicCredit::kPrefix:
      return "prefix";
    case PositiveLogicCredit::kZero:
      return "zero";
  }
  return "?";
}

std::optional<PositiveLogicCredit> ParsePositiveLogicCredit(std::string_view name) {
  for (PositiveLogicCredit c : {PositiveLogicCredit::kSpan, PositiveLogicCredit::kUniform,
                                PositiveLogicCredit::kPrefix, PositiveLogicCredit::kZero}) {
    if (name == PositiveLogicCreditName(c)) return c;
  }
  return std::nullopt;
}

const char* SyntaxCreditName(SyntaxCredit credit) {
  switch (credit) {
    case SyntaxCredit::kSpan:
      return "span";
    case SyntaxCredit::kUniform:
      return "uniform";
    case SyntaxCredit::kCause:
      return "cause";
  }
  return "?";
}

std::optional<SyntaxCredit> ParseSyntaxCredit(std::string_view name) {
  for (SyntaxCredit c : {SyntaxCredit::kSpan, SyntaxCredit::kUniform, SyntaxCredit::kCause}) {
    if (name == SyntaxCreditName(c)) return c;
  }
  return std::nullopt;
}

const char* CreditPlacementName(CreditPlacement placement) {
  switch (placement) {
    case CreditPlacement::kUniform:
      return "uniform";
    case CreditPlacement::kLocalized:
      return "localized";
    case CreditPlacement::kFallback:
      return "fallback";
    case CreditPlacement::kNoTokens:
      return "no_tokens";
    case CreditPlacement::kWithheld:
      return "withheld";
  }
  return "?";
}

const char* FallbackReasonName(FallbackReason reason) {
  switch (reason) {
    case FallbackReason::kNone:
      return "none";
    case FallbackReason::kMissingSpan:
      return "missing_span";
    case FallbackReason::kEmptySpan:
      return "empty_span";
    case FallbackReason::kNoOverlap:
      return "no_overlap";
    case FallbackReason::kLowConfidence:
      return "low_confidence";
  }
  return "?";
}

void TokenCreditStats::Merge(const TokenCreditStats& o) {
  samples += o.samples;
  tokens += o.tokens;
  for (int m = 0; m < 4; ++m) by_mode[m] += o.by_mode[m];
  uniform += o.uniform;
  localized += o.localized;
  fallback_missing_span += o.fallback_missing_span;
  fallback_empty_span += o.fallback_empty_span;
  fallback_no_overlap += o.fallback_no_overlap;
  fallback_low_confidence += o.fallback_low_confidence;
  no_tokens += o.no_tokens;
  withheld += o.withheld;
  logic_spanned += o.logic_spanned;
  logic_spanned_positive += o.logic_spanned_positive;
  advantage_positive += o.advantage_positive;
  advantage_negative += o.advantage_negative;
  span_credit_positive += o.span_credit_positive;
  span_credit_negative += o.span_credit_negative;
}

std::string TokenCreditStats::ToString() const {
  std::string out;
  auto line = [&out](const char* name, int64_t v) {
    out += name;
    out += ' ';
    out += std::to_string(v);
    out += '\n';
  };
  line("samples", samples);
  line("tokens", tokens);
  for (int m = 0; m < 4; ++m) {
    out += "mode.";
    line(FailureModeName(static_cast<FailureMode>(m)), by_mode[m]);
  }
  line("uniform", uniform);
  line("localized", localized);
  line("fallback.missing_span", fallback_missing_span);
  line("fallback.empty_span", fallback_empty_span);
  line("fallback.no_overlap", fallback_no_overlap);
  line("fallback.low_confidence", fallback_low_confidence);
  line("no_tokens", no_tokens);
  line("withheld", withheld);
  line("logic_spanned", logic_spanned);
  line("logic_spanned_positive", logic_spanned_positive);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "advantage_positive %.9g\nadvantage_negative %.9g\n",
                advantage_positive, advantage_negative);
  out += buf;
  std::snprintf(buf, sizeof(buf), "span_credit_positive %.9g\nspan_credit_negative %.9g\n",
                span_credit_positive, span_credit_negative);
  out += buf;
  return out;
}

std::vector<uint32_t> TokensOverlappingSpan(const std::vector<TokenByteRange>& token_bytes,
                                            uint32_t code_offset, const SourceSpan& span) {
  if (span.empty()) return {};
  // 64-bit: a code offset near 4 GiB plus a span must not wrap around.
  return Overlapping(token_bytes, static_cast<uint64_t>(code_offset) + span.begin_byte,
                     static_cast<uint64_t>(code_offset) + span.end_byte, /*sorted=*/false);
}

Status AssignTokenCreditInto(const CreditSample& sample, const TokenCreditOptions& options,
                             TokenCredit* out, TokenCreditStats* stats) {
  if (!std::isfinite(sample.advantage)) {
    return InvalidArgument("token credit: advantage is not finite");
  }
  if (!(options.soft_weight >= 0.0 && options.soft_weight <= 1.0)) {
    return InvalidArgument("token credit: option soft_weight=" +
                           std::to_string(options.soft_weight) + " is outside [0, 1]");
  }
  if (!(options.min_confidence >= 0.0 && options.min_confidence <= 1.0)) {
    return InvalidArgument("token credit: option min_confidence=" +
                           std::to_string(options.min_confidence) + " is outside [0, 1]");
  }
  if (sample.localization_confidence && !std::isfinite(*sample.localization_confidence)) {
    return InvalidArgument("token credit: localization_confidence is not finite");
  }
  if (!options.renormalize && options.soft_weight != 1.0) {
    return InvalidArgument("token credit: option renormalize=false needs soft_weight=1, got " +
                           std::to_string(options.soft_weight));
  }
  bool sorted = true;
  for (size_t t = 0; t < sample.token_bytes.size(); ++t) {
    const TokenByteRange& tok = sample.token_bytes[t];
    if (tok.end < tok.begin) {
      return InvalidArgument("token credit: token " + std::to_string(t) + " has byte range [" +
                             std::to_string(tok.begin) + "," + std::to_string(tok.end) +
                             ") with end < begin");
    }
    if (t > 0) {
      const TokenByteRange& prev = sample.token_bytes[t - 1];
      sorted = sorted && prev.begin <= tok.begin && prev.end <= tok.end;
    }
  }

  TokenCreditStats local;
  local.samples = 1;
  local.tokens = static_cast<int64_t>(sample.token_bytes.size());
  local.by_mode[static_cast<int>(sample.mode)] = 1;

  const size_t tokens = sample.token_bytes.size();
  // Reset every field but keep the advantage buffer's capacity for reuse.
  TokenCredit& credit = *out;
  credit.placement = CreditPlacement::kUniform;
  credit.fallback = FallbackReason::kNone;
  credit.span.reset();
  credit.span_token_begin = 0;
  credit.span_token_count = 0;
  credit.span_found = false;
  credit.span_credit = 0.0;
  if (sample.advantage > 0) local.advantage_positive = sample.advantage;
  if (sample.advantage < 0) local.advantage_negative = sample.advantage;
  bool wanted = false;
  SourceSpan scratch;
  const SourceSpan* span = SelectSpan(sample, options, &wanted, &scratch);
  if (span) credit.span = *span;

  if (sample.token_bytes.empty()) {
    credit.advantages.clear();
    credit.placement = CreditPlacement::kNoTokens;
    local.no_tokens = 1;
  } else if (!wanted) {
    credit.placement = CreditPlacement::kUniform;
    FillUniform(sample.advantage, tokens, &credit);
    local.uniform = 1;
  } else {
    std::vector<uint32_t> on_span;
    if (sample.mode == FailureMode::kLogic && sample.localization_confidence &&
        *sample.localization_confidence < options.min_confidence) {
      credit.fallback = FallbackReason::kLowConfidence;
    } else if (!span) {
      credit.fallback = FallbackReason::kMissingSpan;
    } else if (span->empty()) {
      credit.fallback = FallbackReason::kEmptySpan;
    } else {
      on_span = Overlapping(sample.token_bytes,
                            static_cast<uint64_t>(sample.code_offset) + span->begin_byte,
                            static_cast<uint64_t>(sample.code_offset) + span->end_byte, sorted);
      if (on_span.empty()) credit.fallback = FallbackReason::kNoOverlap;
    }
    if (on_span.empty()) {
      credit.placement = CreditPlacement::kFallback;
      FillUniform(sample.advantage, tokens, &credit);
      switch (credit.fallback) {
        case FallbackReason::kMissingSpan:
          local.fallback_missing_span = 1;
          break;
        case FallbackReason::kEmptySpan:
          local.fallback_empty_span = 1;
          break;
        case FallbackReason::kLowConfidence:
          local.fallback_low_confidence = 1;
          break;
        default:
          local.fallback_no_overlap = 1;
          break;
      }
    } else {
      credit.span_found = true;
      credit.span_token_begin = on_span.front();
      credit.span_token_count = static_cast<uint32_t>(on_span.size());
      const bool logic = sample.mode == FailureMode::kLogic;
      const bool positive = sample.advantage > 0;
      if (logic) {
        local.logic_spanned = 1;
        if (positive) local.logic_spanned_positive = 1;
      }
      const PositiveLogicCredit sign_rule =
          logic && positive ? options.positive_logic : PositiveLogicCredit::kSpan;
      std::vector<uint32_t> prefix;
      if (sign_rule == PositiveLogicCredit::kPrefix) {
        // The tokens before the span's first token (on_span is sorted).
        for (uint32_t t = 0; t < on_span.front(); ++t) prefix.push_back(t);
      }
      switch (sign_rule) {
        case PositiveLogicCredit::kSpan:
          credit.placement = CreditPlacement::kLocalized;
          local.localized = 1;
          FillOnTokens(sample.advantage, tokens, on_span, options, &credit);
          break;
        case PositiveLogicCredit::kUniform:
          credit.placement = CreditPlacement::kUniform;
          local.uniform = 1;
          FillUniform(sample.advantage, tokens, &credit);
          break;
        case PositiveLogicCredit::kPrefix:
          if (!prefix.empty()) {
            credit.placement = CreditPlacement::kLocalized;
            local.localized = 1;
            FillOnTokens(sample.advantage, tokens, prefix, options, &credit);
            break;
          }
          [[fallthrough]];  // nothing before the span: nowhere to put it
        case PositiveLogicCredit::kZero:
          credit.placement = CreditPlacement::kWithheld;
          local.withheld = 1;
          credit.advantages.assign(tokens, 0.0);
          break;
      }
      for (uint32_t t : on_span) credit.span_credit += credit.advantages[t];
      if (positive) local.span_credit_positive = credit.span_credit;
      if (sample.advantage < 0) local.span_credit_negative = credit.span_credit;
    }
  }
  if (stats) stats->Merge(local);
  return Status::Ok();
}

StatusOr<TokenCredit> AssignTokenCredit(const CreditSample& sample,
                                        const TokenCreditOptions& options,
                                        TokenCreditStats* stats) {
  TokenCredit credit;
  EGCA_RETURN_IF_ERROR(AssignTokenCreditInto(sample, options, &credit, stats));
  return credit;
}

Status AssignGroupTokenCreditInto(const std::vector<CreditSample>& samples,
                                  const TokenCreditOptions& options,
                                  std::vector<TokenCredit>* credits, TokenCreditStats* stats) {
  credits->resize(samples.size());
  TokenCreditStats local;
  for (size_t i = 0; i < samples.size(); ++i) {
    Status status = AssignTokenCreditInto(samples[i], options, &(*credits)[i], &local);
    if (!status.ok()) return status.WithContext("sample " + std::to_string(i));
  }
  if (stats) stats->Merge(local);
  return Status::Ok();
}

StatusOr<std::vector<TokenCredit>> AssignGroupTokenCredit(const std::vector<CreditSample>& samples,
                                                          const TokenCreditOptions& options,
                                                          TokenCreditStats* stats) {
  std::vector<TokenCredit> out;
  EGCA_RETURN_IF_ERROR(AssignGroupTokenCreditInto(samples, options, &out, stats));
  return out;
}

std::vector<float> PackTokenAdvantages(const std::vector<TokenCredit>& credits, size_t max_len,
                                       float pad) {
  std::vector<float> out(credits.size() * max_len, pad);
  for (size_t i = 0; i < credits.size(); ++i) {
    const std::vector<double>& a = credits[i].advantages;
    const size_t n = std::min(a.size(), max_len);
    for (size_t t = 0; t < n; ++t) out[i * max_len + t] = static_cast<float>(a[t]);
  }
  return out;
}

std::string DumpCreditMap(const CreditSample& sample, const TokenCredit& credit,
                          std::string_view completion) {
  char buf[256];
  double sum = 0.0;
  for (double a : credit.advantages) sum += a;
  std::string out;
  std::snprintf(buf, sizeof(buf), "mode=%s A=%+.6f T=%zu placement=%s",
                FailureModeName(sample.mode), sample.advantage, credit.advantages.size(),
                CreditPlacementName(credit.placement));
  out += buf;
  if (credit.fallback != FallbackReason::kNone) {
    out += " fallback=";
    out += FallbackReasonName(credit.fallback);
  }
  if (credit.span) {
    std::snprintf(buf, sizeof(buf), " span=[%u,%u) %s", credit.span->begin_byte,
                  credit.span->end_byte, credit.span->ToString().c_str());
    out += buf;
  }
  if (credit.placement == CreditPlacement::kLocalized) {
    std::snprintf(buf, sizeof(buf), " span_tokens=%u", credit.span_token_count);
    out += buf;
  }
  std::snprintf(buf, sizeof(buf), " code_offset=%u sum=%+.6f\n", sample.code_offset, sum);
  out += buf;
  // A credit computed for another sample must not read past its token list.
  const size_t shown = std::min(credit.advantages.size(), sample.token_bytes.size());
  for (size_t t = 0; t < shown; ++t) {
    const TokenByteRange& tok = sample.token_bytes[t];
    std::string_view text;
    if (tok.begin <= tok.end && tok.end <= completion.size()) {
      text = completion.substr(tok.begin, tok.end - tok.begin);
    }
    std::snprintf(buf, sizeof(buf), "%5zu [%u,%u) %+.6f ", t, tok.begin, tok.end,
                  credit.advantages[t]);
    out += buf;
    out += '"';
    out += EscapeToken(text);
    out += "\"\n";
  }
  return out;
}

}  // namespace egca::credit
