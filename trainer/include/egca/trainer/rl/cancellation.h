// The cancellation diagnostic (issue 23): how much of uniform GRPO's update survives the
// cancellation between a group's samples, and how much of what survives falls on the
// divergent statement.
//
// Uniform GRPO gives token t of sample i the coefficient a_{i,t} = A_i / T_i on
// grad log pi(y_{i,t} | x, y_{i,<t}). Two terms are the same gradient exactly when the two
// samples share the context and the token: the same prompt (one group) and the same tokens
// up to and including position t. So the net update of a group is defined on the trie of its
// completions: each trie node n = (prefix, token) gets
//
//   c(n) = sum over the samples i that pass through n of A_i / T_i
//
// (with mean-centred advantages, a node every sample passes through gets sum_i A_i / T_i,
// which is 0 when the lengths are equal). The net update mass is sum_n |c(n)|, the gross
// mass sum_i sum_t |a_{i,t}| = sum_i |A_i|. A node is divergent when its token overlaps the
// earliest divergence (the divergent statement) of a LOGIC sample passing through it. The
// diagnostic is
//
//   divergent share = sum over divergent nodes of |c(n)| / sum_n |c(n)|
//
// next to the share of the group's tokens that are divergent (what the share would be with
// no localization at all). Tokens after the first token where two samples differ never
// cancel under this definition, even when the texts agree again later (their contexts
// differ): it measures exact cancellation, the one the gradient sees at rho = 1, not
// approximate similarity. Route errors (A_i = 0) take no part.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "egca/core/span.h"
#include "egca/credit/token_credit.h"

namespace egca::trainer {

// Per token: does its byte range overlap `earliest` (the earliest divergence of a LOGIC
// sample, in completion bytes)? All false without a span or for another mode.
std::vector<bool> DivergentTokenMask(const std::vector<credit::TokenByteRange>& token_bytes,
                                     const std::optional<SourceSpan>& earliest, bool logic);

struct CancellationSample {
  std::vector<int32_t> token_ids;
  double advantage = 0;         // A_i
  std::vector<bool> divergent;  // per token (DivergentTokenMask); shorter = false
};

// Sums of one group or of many (Add): the diagnostic's numerators and denominators.
struct CancellationSums {
  double gross = 0;          // sum_i |A_i| (samples with tokens)
  double net = 0;            // sum_n |c(n)|
  double net_divergent = 0;  // sum over divergent nodes of |c(n)|
  int64_t tokens = 0;        // sum_i T_i
  int64_t divergent_tokens = 0;
  void Add(const CancellationSums& o) {
    gross += o.gross, net += o.net, net_divergent += o.net_divergent;
    tokens += o.tokens, divergent_tokens += o.divergent_tokens;
  }
  double divergent_share() const { return net > 0 ? net_divergent / net : 0.0; }
  double divergent_token_share() const {
    return tokens > 0 ? static_cast<double>(divergent_tokens) / static_cast<double>(tokens) : 0.0;
  }
  double net_over_gross() const { return gross > 0 ? net / gross : 0.0; }
};

// The sums of one group (the samples of one prompt).
CancellationSums GroupCancellation(const std::vector<CancellationSample>& group);

}  // namespace egca::trainer
