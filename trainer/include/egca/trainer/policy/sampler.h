// Batched sampling of G completions per prompt from a DecoderModel, with the log-probs GRPO
// needs recorded at sampling time.
//
// Two log-probs are returned per sampled token:
//   policy_log_probs   log p_theta(token | prefix) under the unmodified model (temperature
//                      1, no top-k/top-p): the policy's log-prob, what GRPO's importance
//                      ratio and KL use, and what DecoderModel::ScoreCompletions recomputes
//                      by teacher forcing.
//   sampling_log_probs log q(token | prefix) under the distribution actually sampled from
//                      (logits / temperature, then top-k, then top-p, renormalized; 0 for
//                      greedy decoding, which is deterministic).
//
// Reproducibility: every completion owns a random stream derived from (seed, prompt index
// or SamplingOptions::prompt_keys, sample index), so the same seed gives the same tokens whatever
// the batch size, and the random numbers are drawn on the CPU, so they do not depend on the
// device's generator.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "egca/core/status.h"
#include "egca/trainer/policy/model.h"

namespace egca::trainer {

class Tokenizer;

enum class FinishReason {
  kStopToken,   // sampled one of stop_token_ids (the token is kept in token_ids)
  kStopString,  // the decoded text contains a stop string (text is cut before it)
  kMaxTokens,   // reached max_new_tokens
};
const char* FinishReasonName(FinishReason reason);  // "stop_token", "stop_string", "length"

struct SamplingOptions {
  int64_t num_samples_per_prompt = 1;  // G
  int64_t max_new_tokens = 256;
  double temperature = 1.0;               // 0 = greedy
  double top_p = 1.0;                     // nucleus: keep the smallest set with mass >= top_p
  int64_t top_k = 0;                      // 0 = no limit
  std::vector<int32_t> stop_token_ids;    // e.g. <|im_end|>, <|endoftext|>
  std::vector<std::string> stop_strings;  // need `decode`
  uint64_t seed = 0;
  // Per prompt (empty, or one per prompt): the key of its streams in place of its index in
  // this call, so a prompt samples the same tokens whatever else is in the batch (a
  // data-parallel rank keys its prompts by their position in the global step).
  std::vector<uint64_t> prompt_keys;
  bool use_kv_cache = true;  // false recomputes the whole prefix every step (benchmarks)
  // With the KV cache: decode against a StaticKvCache (buffers allocated once, written in
  // place; the step's shapes never change) rather than a KvCache grown by one column per
  // token and layer (false: the decoder before issue 39, kept for tests and benchmarks).
  // The tokens and log-probs are the same up to float rounding.
  bool static_cache = true;
  // CUDA graphs for the static decode step on a CUDA device, where this build's LibTorch has
  // them (EGCA_HAVE_CUDA_GRAPHS): the step is captured once and replayed per token, one
  // launch instead of hundreds. kOff until a GPU run has measured it (bench/train_step
  // --cuda-graph auto; docs/PERFORMANCE.md); ignored on the CPU.
  enum class CudaGraph { kOff, kAuto };
  CudaGraph cuda_graph = CudaGraph::kOff;
  int32_t pad_token_id = 0;  // fills finished rows; never attended to
  // Token ids -> text, used for Completion::text and stop strings. Borrowed state only:
  // e.g. [&tok](const auto& ids) { return tok.Decode(ids, /*skip_special=*/true); }.
  // When empty, Completion::text stays empty and stop_strings must be empty.
  std::function<std::string(const std::vector<int32_t>&)> decode;

  SamplingOptions& set_num_samples_per_prompt(int64_t g) {
    num_samples_per_prompt = g;
    return *this;
  }
  SamplingOptions& set_max_new_tokens(int64_t n) {
    max_new_tokens = n;
    return *this;
  }
  SamplingOptions& set_temperature(double t) {
    temperature = t;
    return *this;
  }
  SamplingOptions& set_top_p(double p) {
    top_p = p;
    return *this;
  }
  SamplingOptions& set_top_k(int64_t k) {
    top_k = k;
    return *this;
  }
  SamplingOptions& set_seed(uint64_t s) {
    seed = s;
    return *this;
  }
  SamplingOptions& set_stop_token_ids(std::vector<int32_t> ids) {
    stop_token_ids = std::move(ids);
    return *this;
  }
  SamplingOptions& set_stop_strings(std::vector<std::string> s) {
    stop_strings = std::move(s);
    return *this;
  }
  SamplingOptions& set_use_kv_cache(bool b) {
    use_kv_cache = b;
    return *this;
  }
  SamplingOptions& set_static_cache(bool b) {
    static_cache = b;
    return *this;
  }
  SamplingOptions& set_cuda_graph(CudaGraph g) {
    cuda_graph = g;
    return *this;
  }
  SamplingOptions& set_decode(std::function<std::string(const std::vector<int32_t>&)> f) {
    decode = std::move(f);
    return *this;
  }
  // Uses `tokenizer` (borrowed; must outlive the options) for text and stop strings, with
  // special tokens skipped in the text. Include "egca/trainer/policy/tokenizer.h" to call it (a
  // template only so that this header does not need the tokenizer's).
  template <typename Tok = Tokenizer>
  SamplingOptions& set_tokenizer(const Tok& tokenizer) {
    decode = [&tokenizer](const std::vector<int32_t>& ids) {
      return tokenizer.Decode(ids, /*skip_special=*/true);
    };
    return *this;
  }
};

struct Completion {
  int64_t prompt_index = 0;               // index into the prompts passed to Generate
  int64_t sample_index = 0;               // 0 .. G-1
  std::vector<int32_t> token_ids;         // generated tokens only (no prompt)
  std::string text;                       // decode(token_ids), cut before a stop string
  std::vector<float> policy_log_probs;    // per token, see the header comment
  std::vector<float> sampling_log_probs;  // per token, see the header comment
  FinishReason finish_reason = FinishReason::kMaxTokens;
};

// Samples options.num_samples_per_prompt completions for every prompt (all in one batch,
// prompts left-padded, each prompt's prefill computed once and shared by its G samples).
// Result order: prompt 0 samples 0..G-1, prompt 1 samples 0..G-1, ...
// Runs under NoGradGuard on the model's device. INVALID_ARGUMENT for an empty prompt, a
// token id outside the vocabulary, stop strings without `decode`, or bad option values.
// The ids that end a chat turn for `tokenizer` (<|im_end|>, <|endoftext|>, <|eot_id|>,
// <|end_of_text|> where the vocabulary has them) plus the model's eos (when >= 0).
std::vector<int32_t> DefaultStopTokenIds(const Tokenizer& tokenizer, int64_t eos_token_id);

StatusOr<std::vector<Completion>> Generate(DecoderModel& model,
                                           const std::vector<std::vector<int32_t>>& prompts,
                                           const SamplingOptions& options);

}  // namespace egca::trainer
