// The layer math of DecoderModel as free functions, so tests can check each formula
// against the independent reference (tests/trainer/reference/) in isolation.
#pragma once

#include <cstdint>
#include <utility>

#include <ATen/ATen.h>

namespace egca::trainer::layers {

// transformers' RMSNorm: in float32, x / sqrt(mean(x^2, last dim) + eps), cast back to x's
// dtype, times weight. x [..., D], weight [D].
at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps);

// cos and sin tables for positions [B, T] (int64): [B, T, head_dim] float32 each, with
// inv_freq[i] = theta^(-2i/head_dim) and the frequency vector concatenated with itself
// (rotate_half convention).
std::pair<at::Tensor, at::Tensor> RotaryCosSin(const at::Tensor& positions, int64_t head_dim,
                                               double theta);

// x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2]).
// x [B, H, T, D]; cos/sin [B, T, D] float32. Returns x's dtype.
at::Tensor ApplyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

// [B, Hkv, T, D] -> [B, Hkv * n_rep, T, D]; head h of the result is kv head h / n_rep.
at::Tensor RepeatKv(const at::Tensor& x, int64_t n_rep);

// Position ids for the last `t_new` columns of `mask` [B, T_total]: cumsum(mask) - 1,
// clamped at 0 (padding positions get 0; their outputs are never used).
at::Tensor PositionsFromMask(const at::Tensor& mask, int64_t t_new);

// Additive float32 attention bias [B, 1, T_new, T_total]: 0 where query i (at absolute
// column T_total - T_new + i) may see key j (j <= that column and mask[b, j] = 1), the
// float32 lowest value elsewhere (not -inf, so a fully masked padding row stays finite).
at::Tensor AttentionBias(const at::Tensor& mask, int64_t t_new);

// softmax(q k^T / sqrt(D) + bias) v with q [B, H, T, D], k/v [B, H, S, D], bias
// broadcastable to [B, H, T, S] (or undefined). Scores and softmax in float32.
at::Tensor Attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& bias);

}  // namespace egca::trainer::layers
