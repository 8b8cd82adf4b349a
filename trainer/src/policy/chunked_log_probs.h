// Log-probabilities of chosen tokens through the output projection, one tile of the
// [rows, V] logits at a time, so the float32 logits (V = 151,936 for Qwen) never exist for
// all rows at once, forward or backward.
//
// For rows x [M, H] (hidden states after the final norm), lm_head weight W [V, H] and
// targets t [M]:
//   log_probs[r] = z_r[t_r] - logsumexp(z_r),        z_r = float32(W x_r)
//   entropy[r]   = -sum_v p_rv log p_rv,              p_r = softmax(z_r)   (no gradient)
// A tile is `rows` rows by a slice of `vocab` columns. The vocabulary slices are the outer
// loop: forward keeps a running max, sum of exponentials (and, for the entropy, sum of
// exp * logit) per row over the slices (the online logsumexp), and takes z_r[t_r] as the
// dot product x_r . W[t_r]. Backward recomputes each tile's logits (one more [R, H] x
// [H, Vs] product per tile) and forms p = exp(z - logsumexp) in place; the gradient splits
// into the dense part -g p, whose weight gradient p^T (-g x) is written once per vocabulary
// slice (not added into the whole [V, H] gradient once per row chunk) and whose row
// gradient -g (p W) is accumulated in a small [M, H], and the one-hot part g x_r added at
// row t_r of the weight gradient and g W[t_r] to the row gradient. On a CPU a tile of a
// few MiB stays in cache, so the elementwise passes over it cost no memory traffic.
// Logits, the softmax and the gradients are float32 (float64 for a float64 weight); the
// results are returned as float32. Gradients are accumulated in that dtype and rounded
// once to the weight's.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace egca::trainer {

struct ChunkedLogProbs {
  at::Tensor log_probs;  // [M] float32, differentiable in rows and weight
  at::Tensor entropy;    // [M] float32 without gradient when asked for, else undefined
};

// The shape of one tile of the [M, V] logits: up to `rows` rows by up to `vocab` columns.
struct LogitTile {
  int64_t rows = 1;   // >= 1
  int64_t vocab = 1;  // >= 1
};

// rows [M, H] and weight [V, H] in the same dtype and on the same device; targets [M] int64
// in [0, V).
ChunkedLogProbs ChunkedTokenLogProbs(const at::Tensor& rows, const at::Tensor& weight,
                                     const at::Tensor& targets, LogitTile tile, bool want_entropy);

// A tile of about `tile_bytes` of float32 logits for M rows and a vocabulary of V: at most
// 512 rows (row blocks of equal size) by the vocabulary slice that fills the budget; when
// the budget holds the whole vocabulary, as many whole-vocabulary rows as it holds.
LogitTile LogitTileFor(int64_t tile_bytes, int64_t m, int64_t vocab_size);

}  // namespace egca::trainer
