// How the GRPO loss of a step is normalized over samples and tokens (`loss.normalization`).
//
// The credit operator hands the loss a_{i,t} with sum_t a_{i,t} = A_i (uniform credit:
// a_{i,t} = A_i / T_i). GrpoLoss computes (1 / B) sum_i w_i sum_t l_{i,t}(a_{i,t}) with B the
// samples of the optimizer batch. The three normalizations differ only in w_i:
//
//   sequence  w_i = 1                 GRPO (DeepSeekMath) and EGCA: every sample weighs the
//                                     same, its tokens share 1 / T_i (through a_{i,t}).
//   token     w_i = B * T_i / N       DAPO: one mean over the N completion tokens of the
//                                     batch; with uniform credit the loss is
//                                     (1 / N) sum_i sum_t l_{i,t}(A_i).
//   constant  w_i = T_i / L_max       Dr. GRPO: a constant normalizer instead of 1 / T_i, the
//                                     generation budget L_max = rollout.max_new_tokens (TRL's
//                                     "dr_grpo" divides by batch size x max_completion_length);
//                                     with uniform credit (1 / (B L_max)) sum_i sum_t l(A_i).
//
// Why a weight is enough: the clipped surrogate is positively homogeneous in the advantage
// (min(rho c a, clip(rho) c a) = c min(rho a, clip(rho) a) for c > 0), so scaling a_{i,t} by
// T_i equals scaling the sample's loss by T_i; the KL term's 1 / T_i (GrpoLoss) turns into
// 1 / N (token) or 1 / L_max (constant) per token the same way. Localized credit keeps its own
// shape: only the per-sample scale changes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace egca::trainer {

enum class LossNormalization { kSequence, kToken, kConstant };

// "sequence", "token", "constant"; nullopt for anything else.
std::optional<LossNormalization> ParseLossNormalization(std::string_view name);
const char* LossNormalizationName(LossNormalization n);

// The whole optimizer batch (over every micro-batch and rank), which the weights depend on.
struct LossNormalizationBatch {
  int64_t samples = 0;         // B
  int64_t tokens = 0;          // N: completion tokens of the batch
  int64_t max_new_tokens = 0;  // L_max (constant)
};

// w_i of every sample of `lengths` (T_i, completion tokens; a part of the batch is fine).
// A batch with N = 0 or L_max = 0 gives weights 0 where they would divide by 0.
std::vector<double> LossNormalizationWeights(const std::vector<int64_t>& lengths,
                                             LossNormalization n,
                                             const LossNormalizationBatch& batch);

}  // namespace egca::trainer
