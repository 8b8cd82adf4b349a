// DecoderModel: a decoder-only transformer covering the Llama, Qwen2/Qwen2.5 and Qwen3
// layouts, with Hugging Face parameter names, so `named_parameters()` yields exactly the
// tensor names of a transformers checkpoint ("model.embed_tokens.weight",
// "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.q_norm.weight",
// "model.norm.weight", "lm_head.weight", ...).
//
// Math (as transformers implements it): token embedding; per layer, with x = RMSNorm(h),
//   h += o_proj(Attention(RoPE(q_norm?(q_proj(x))), RoPE(k_norm?(k_proj(x))), v_proj(x)))
// then, with x = RMSNorm(h),
//   h += down_proj(silu(gate_proj(x)) * up_proj(x))
// final RMSNorm and lm_head (tied to the embedding when tie_word_embeddings). Rotary
// embeddings use the rotate_half convention (first and second halves of each head are
// paired, not interleaved) with inv_freq = rope_theta^(-2i/head_dim); grouped-query
// attention maps query head h to kv head h / (num_attention_heads / num_key_value_heads);
// RMSNorm and softmax run in float32 whatever the parameter dtype.
//
// Device-agnostic: the model lives wherever `to(device)` put it; inputs must be on the
// same device. Nothing here assumes CPU.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/nn/module.h>

#include "egca/trainer/policy/model_config.h"

namespace egca::trainer {

class DecoderBody;  // "model.*" parameters; defined in model.cpp.
class Projection;   // a linear layer's weight (and bias); defined in model.cpp.

// Keys and values of every layer for the tokens seen so far, so decoding one more token
// costs one position instead of the whole prefix.
struct KvCache {
  std::vector<at::Tensor> keys;    // per layer [B, num_key_value_heads, T_cached, head_dim]
  std::vector<at::Tensor> values;  // per layer, same shape as keys
  at::Tensor attention_mask;       // [B, T_cached] int64, 1 = real token, 0 = padding

  int64_t length() const { return attention_mask.defined() ? attention_mask.size(1) : 0; }
  bool empty() const { return length() == 0; }
  // Keeps (and reorders/duplicates) batch rows: row i of the result is row rows[i] of this.
  // `rows` is a 1-D int64 tensor on the cache's device. Used to fan a prompt out to G samples.
  void SelectRows(const at::Tensor& rows);
};

// A key/value cache of fixed capacity for decoding one token per row at a time: every
// buffer is allocated once (MakeStaticCache) and DecodeStep writes the new token's keys
// and values in place at `column`, so a decode step has the same shapes and tensor
// addresses at every token: no copy of the prefix per token (KvCache grows by cat), and
// on CUDA the step can be captured once in a CUDA graph and replayed (sampler.cpp).
struct StaticKvCache {
  std::vector<at::Tensor> keys;    // per layer [B, num_key_value_heads, capacity, head_dim]
  std::vector<at::Tensor> values;  // per layer, same shape as keys
  at::Tensor mask;                 // [B, capacity] int64, 1 = a real token is cached there
  at::Tensor positions;            // [B] int64, the position id of each row's next token
  at::Tensor column;               // [1] int64, the column the next token is written to

  int64_t rows() const { return mask.defined() ? mask.size(0) : 0; }
  int64_t capacity() const { return mask.defined() ? mask.size(1) : 0; }
  // Keeps (and reorders) batch rows, as KvCache::SelectRows; allocates new buffers.
  void SelectRows(const at::Tensor& rows);
};

// Per-token log-probabilities of completions under the model, batched.
struct CompletionLogProbs {
  at::Tensor log_probs;  // [N, L] float32, L = longest completion; log p(c_t | prompt, c_<t)
  at::Tensor mask;       // [N, L] float32, 1 where a completion token exists, 0 padding
  at::Tensor entropy;    // [N, L] float32 (no gradient) when asked for, else undefined
};

class DecoderModel : public torch::nn::Module {
 public:
  // Creates the module tree with parameters of the right shapes (float32 on the CPU, all
  // zero). Use InitRandom or LoadCheckpoint (checkpoint.h) to fill them, `to()` to move.
  // `config` must satisfy config.Validate().
  explicit DecoderModel(const ModelConfig& config);
  ~DecoderModel() override;

  const ModelConfig& config() const { return config_; }
  // Device and dtype of the parameters.
  at::Device device() const;
  at::ScalarType dtype() const;

  // Fills every parameter deterministically from `seed` (values drawn on the CPU in float32
  // and copied, so the same seed gives the same model on every device): projections and
  // embeddings ~ N(0, stddev^2), biases ~ N(0, stddev^2), norm weights 1 + N(0, stddev^2)
  // (transformers uses exactly 1; the jitter lets tests notice a norm weight being ignored).
  void InitRandom(uint64_t seed, double stddev = 0.02);

  // Forward pass.
  //   input_ids       [B, T] int64, on the model's device.
  //   attention_mask  [B, T_cached + T] (int64/bool, 1 = real token, 0 = padding) or an
  //                   undefined tensor for "no padding". Left padding (generation) and right
  //                   padding (training) both work: position ids are the running count of
  //                   real tokens (cumsum(mask) - 1), as transformers computes them.
  //   cache           optional; when given, keys/values of these T tokens are appended and
  //                   attention covers the cached prefix. Start with an empty KvCache.
  // Returns logits [B, T, vocab_size] float32. Gradients flow unless the caller holds a
  // torch::NoGradGuard.
  at::Tensor Forward(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                     KvCache* cache = nullptr);

  // Teacher-forced log-probabilities: out[b, t] = log p(input_ids[b, t] | input_ids[b, <t])
  // for t >= 1 where attention_mask[b, t] = 1 and some real token precedes it; 0 elsewhere
  // (t = 0, padding). [B, T] float32 with gradients (wrap in NoGradGuard for a frozen
  // reference model).
  at::Tensor TokenLogProbs(const at::Tensor& input_ids, const at::Tensor& attention_mask = {});

  // What GRPO needs: for each (prompt, completion) pair the log-probs of the completion
  // tokens. Builds one right-padded batch on the model's device. prompts.size() ==
  // completions.size(); every prompt non-empty. Gradients flow as in TokenLogProbs. Only
  // the positions that predict a completion token go through lm_head. `want_entropy`: also
  // the policy's entropy at each completion position (nats, no gradient).
  CompletionLogProbs ScoreCompletions(const std::vector<std::vector<int32_t>>& prompts,
                                      const std::vector<std::vector<int32_t>>& completions,
                                      bool want_entropy = false);

  // A StaticKvCache of `capacity` columns holding `prefill` (rows and cached columns as
  // they are there; capacity >= prefill.length()), its next column prefill.length().
  StaticKvCache MakeStaticCache(const KvCache& prefill, int64_t capacity) const;

  // One decoding step: input_ids [B, 1] int64 (one token per row of `cache`) at column
  // cache.column; returns the next-token logits [B, V] float32 and advances cache.column
  // and cache.positions by one, in place. The same numbers as Forward(input_ids, mask,
  // &kv_cache) with a KvCache holding the same tokens. Reads nothing back to the host and
  // allocates no cache memory: safe to capture in a CUDA graph. The caller keeps
  // cache.column < cache.capacity() and holds a NoGradGuard.
  at::Tensor DecodeStep(const at::Tensor& input_ids, StaticKvCache& cache);

  // The output projection weight [vocab_size, hidden_size] (the embedding when tied).
  at::Tensor lm_head_weight() const;

  // How TokenLogProbs and ScoreCompletions go from hidden states to log-probs: the rows
  // that predict a token go through lm_head and log-softmax one tile of `bytes` of float32
  // logits at a time (rows by a vocabulary slice, forward and backward; see
  // chunked_log_probs.h), so a step never holds the [N, L, V] logits. kAutoLogitChunk:
  // 1 MiB tiles on the CPU (they stay in cache), 1 GiB on a GPU (bigger products).
  // 0: no chunks, one [N, L, V] log-softmax over every position, padding included (the
  // path before chunking; kept for the equality tests and bench/train_step's baseline).
  static constexpr int64_t kAutoLogitChunk = -1;
  void set_logit_chunk_bytes(int64_t bytes) { logit_chunk_bytes_ = bytes; }
  int64_t logit_chunk_bytes() const { return logit_chunk_bytes_; }

 private:
  ModelConfig config_;
  std::shared_ptr<DecoderBody> body_;    // "model"
  std::shared_ptr<Projection> lm_head_;  // "lm_head"; null when tied
  int64_t logit_chunk_bytes_ = kAutoLogitChunk;
};

}  // namespace egca::trainer
