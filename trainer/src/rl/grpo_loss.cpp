#include "egca/trainer/rl/grpo_loss.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>

namespace egca::trainer {

at::Tensor GrpoLoss(const at::Tensor& log_probs, const at::Tensor& old_log_probs,
                    const at::Tensor& ref_log_probs, const at::Tensor& advantages,
                    const at::Tensor& mask, const GrpoLossOptions& options,
                    GrpoLossStats* stats) {
  TORCH_CHECK(log_probs.dim() == 2, "GrpoLoss: log_probs must be [B, L], got ", log_probs.sizes());
  TORCH_CHECK(old_log_probs.sizes() == log_probs.sizes() && advantages.sizes() == log_probs.sizes() &&
                  mask.sizes() == log_probs.sizes(),
              "GrpoLoss: old_log_probs, advantages and mask must be ", log_probs.sizes());
  const bool use_kl = options.beta != 0;
  TORCH_CHECK(!use_kl || (ref_log_probs.defined() && ref_log_probs.sizes() == log_probs.sizes()),
              "GrpoLoss: beta != 0 needs ref_log_probs of shape ", log_probs.sizes());
  const int64_t b = log_probs.size(0);
  const double batch = static_cast<double>(options.batch_samples > 0 ? options.batch_samples : b);

  const at::Tensor lp = log_probs.to(at::kFloat);
  const at::Tensor m = mask.to(at::kFloat);
  const at::Tensor a = advantages.to(at::kFloat);
  // Padding positions get log-ratio 0 so exp() never overflows on garbage.
  const at::Tensor log_ratio = (lp - old_log_probs.to(at::kFloat)) * m;
  const at::Tensor ratio = at::exp(log_ratio);
  const at::Tensor clipped = at::clamp(ratio, 1.0 - options.eps_low, 1.0 + options.eps_high);
  const at::Tensor surrogate = -at::min(ratio * a, clipped * a) * m;  // [B, L]
  at::Tensor per_token = surrogate;

  at::Tensor kl;
  if (ref_log_probs.defined() && ref_log_probs.sizes() == log_probs.sizes()) {
    const at::Tensor d = (ref_log_probs.to(at::kFloat) - lp) * m;
    kl = (at::exp(d) - d - 1) * m;  // [B, L]
    if (use_kl) {
      // 1 / T_i per sample (a sample with no tokens contributes nothing).
      const at::Tensor lengths = m.sum(1, /*keepdim=*/true).clamp_min(1.0);
      per_token = per_token + options.beta * kl / lengths;
    }
  }
  if (options.sample_weights.defined()) {
    TORCH_CHECK(options.sample_weights.dim() == 1 && options.sample_weights.size(0) == b,
                "GrpoLoss: sample_weights must be [", b, "], got ", options.sample_weights.sizes());
    per_token = per_token * options.sample_weights.to(per_token.device(), at::kFloat).unsqueeze(1);
  }
  at::Tensor loss = per_token.sum() / batch;

  if (stats != nullptr) {
    at::NoGradGuard no_grad;
    const double tokens = m.sum().item<double>();
    const double denom = std::max(tokens, 1.0);
    stats->tokens = static_cast<int64_t>(tokens);
    stats->loss = loss.item<double>();
    stats->surrogate = surrogate.sum().item<double>() / batch;
    stats->kl = kl.defined() ? kl.sum().item<double>() / denom : 0.0;
    const at::Tensor real = m > 0.5;
    stats->clip_low =
        ((ratio < 1.0 - options.eps_low) & (a < 0) & real).sum().item<double>() / denom;
    stats->clip_high =
        ((ratio > 1.0 + options.eps_high) & (a > 0) & real).sum().item<double>() / denom;
    stats->ratio_mean = (ratio * m).sum().item<double>() / denom;
    stats->ratio_max = tokens > 0 ? at::where(real, ratio, at::zeros_like(ratio)).max().item<double>() : 0.0;
  }
  return loss;
}

}  // namespace egca::trainer
