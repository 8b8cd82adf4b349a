// The GRPO objective with token-level advantages (EGCA eq. 10 with the clipped surrogate).
//
// For sample i and completion token t, with rho = exp(log pi_theta - log pi_old):
//   l_{i,t} = -min(rho * a_{i,t}, clip(rho, 1 - eps_low, 1 + eps_high) * a_{i,t})
//             + beta * KL_k3(pi_theta || pi_ref)_{i,t} / T_i
//   KL_k3 = exp(log pi_ref - log pi_theta) - (log pi_ref - log pi_theta) - 1   (Schulman's k3)
//   loss  = (1 / B) * sum_i w_i * sum_t l_{i,t}        (w_i = 1 unless sample_weights)
// a_{i,t} already carries the 1/T_i (uniform) or 1/|span| (localized) normalization (the
// EGCA operator makes sum_t a_{i,t} = A_i), so the surrogate is summed over tokens. The KL
// term has no such factor of its own, so it is divided by T_i: with uniform advantages
// a_{i,t} = A_i / T_i the loss is then exactly DeepSeekMath's GRPO objective
//   -(1/G) sum_i (1/|o_i|) sum_t [min(rho A_i, clip(rho) A_i) - beta KL_{i,t}].
// B is the number of samples of the whole optimizer batch (`batch_samples`), not of the
// micro-batch, so summing the gradients of micro-batches gives the gradient of the batch.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace egca::trainer {

struct GrpoLossOptions {
  double eps_low = 0.2;   // clip(rho, 1 - eps_low, .)
  double eps_high = 0.2;  // clip(rho, ., 1 + eps_high) (DAPO's clip-higher when > eps_low)
  double beta = 0.05;     // KL coefficient; 0 skips the KL (ref_log_probs may be undefined)
  // Samples in the whole optimizer batch (the 1/B above); 0: this call's B.
  int64_t batch_samples = 0;
  // [B] per-sample weights w_i on sum_t l_{i,t} (undefined: all 1). Multi-turn training sums
  // one GRPO loss per response group, (1/|g|) sum_{i in g}: w_i = G / |g_i| with
  // batch_samples = prompts x G keeps one scale for single- and multi-turn steps.
  at::Tensor sample_weights;
};

// Per-call statistics (no gradient), for logging. Token means are over mask = 1 tokens.
struct GrpoLossStats {
  double loss = 0;            // the returned loss's value
  double surrogate = 0;       // (1/B) sum -min(...)
  double kl = 0;              // mean KL_k3 per token (computed even when beta = 0 if ref given)
  double clip_low = 0;        // fraction of tokens with a < 0 and rho < 1 - eps_low (clipped)
  double clip_high = 0;       // fraction of tokens with a > 0 and rho > 1 + eps_high (clipped)
  double ratio_mean = 0;      // mean rho
  double ratio_max = 0;
  int64_t tokens = 0;         // mask = 1 tokens
};

// All tensors [B, L] on one device; log-probs float32 (or any float: computed in float32).
//   log_probs      log pi_theta, with gradient
//   old_log_probs  log pi_old (sampling-time policy log-probs), no gradient
//   ref_log_probs  log pi_ref (frozen reference model); undefined when beta = 0
//   advantages     a_{i,t}
//   mask           1 for completion tokens, 0 for padding
// Returns the scalar loss (with gradient through log_probs). `stats` optional.
at::Tensor GrpoLoss(const at::Tensor& log_probs, const at::Tensor& old_log_probs,
                    const at::Tensor& ref_log_probs, const at::Tensor& advantages,
                    const at::Tensor& mask, const GrpoLossOptions& options,
                    GrpoLossStats* stats = nullptr);

}  // namespace egca::trainer
