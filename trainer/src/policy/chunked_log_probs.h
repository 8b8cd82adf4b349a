// Log-probabilities of chosen tokens through the output projection, a chunk of rows at a
// time, so the [rows, V] float32 logits (V = 151,936 for Qwen) never exist for all rows at
// once, forward or backward.
//
// For rows x [M, H] (hidden states after the final norm), lm_head weight W [V, H] and
// targets t [M]:
//   log_probs[r] = z_r[t_r] - logsumexp(z_r),        z_r = float32(W x_r)
//   entropy[r]   = -sum_v p_rv log p_rv,              p_r = softmax(z_r)   (no gradient)
// Backward recomputes each chunk's logits (one more [C, H] x [H, V] product per chunk) from
// the saved rows and the per-row logsumexp, and forms d log_probs / d z = onehot(t) - p
// chunk by chunk: the memory a chunk needs is a few [C, V] float32 buffers, whatever M is.
// Logits, log-softmax and the gradient of the logits are float32 (float64 for a float64
// weight); the results are returned as float32. The weight's gradient is accumulated over
// chunks in that dtype (in the weight's own when it is as wide, or when one chunk holds
// every row).
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace egca::trainer {

struct ChunkedLogProbs {
  at::Tensor log_probs;  // [M] float32, differentiable in rows and weight
  at::Tensor entropy;    // [M] float32 without gradient when asked for, else undefined
};

// rows [M, H] and weight [V, H] in the same dtype and on the same device; targets [M] int64
// in [0, V). chunk_rows >= 1: rows per chunk.
ChunkedLogProbs ChunkedTokenLogProbs(const at::Tensor& rows, const at::Tensor& weight,
                                     const at::Tensor& targets, int64_t chunk_rows,
                                     bool want_entropy);

// Rows per chunk for a budget of `chunk_bytes` of float32 logits per chunk (at least 1).
int64_t LogitChunkRows(int64_t chunk_bytes, int64_t vocab_size);

}  // namespace egca::trainer
