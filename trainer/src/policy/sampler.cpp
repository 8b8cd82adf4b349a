#include "egca/trainer/policy/sampler.h"

#include "egca/core/mix.h"
#include "egca/trainer/policy/tokenizer.h"

#include <ATen/ATen.h>
#if EGCA_HAVE_CUDA_GRAPHS
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>

#include <fmt/format.h>

namespace egca::trainer {
namespace {

// Uniform in [0, 1) from 53 random bits: identical on every platform, unlike
// std::uniform_real_distribution.
double NextUniform(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
}

Status ValidateOptions(const DecoderModel& model, const std::vector<std::vector<int32_t>>& prompts,
                       const SamplingOptions& o) {
  if (o.num_samples_per_prompt < 1) {
    return InvalidArgument("SamplingOptions.num_samples_per_prompt must be >= 1");
  }
  if (o.max_new_tokens < 0) return InvalidArgument("SamplingOptions.max_new_tokens must be >= 0");
  if (!(o.temperature >= 0)) return InvalidArgument("SamplingOptions.temperature must be >= 0");
  if (!(o.top_p > 0 && o.top_p <= 1)) {
    return InvalidArgument("SamplingOptions.top_p must be in (0, 1]");
  }
  if (o.top_k < 0) return InvalidArgument("SamplingOptions.top_k must be >= 0");
  if (!o.stop_strings.empty() && !o.decode) {
    return InvalidArgument(
        "SamplingOptions.stop_strings need SamplingOptions.decode "
        "(or set_tokenizer)");
  }
  for (const auto& s : o.stop_strings) {
    if (s.empty()) return InvalidArgument("SamplingOptions.stop_strings: empty stop string");
  }
  const int64_t vocab = model.config().vocab_size;
  if (o.pad_token_id < 0 || o.pad_token_id >= vocab) {
    return InvalidArgument(
        fmt::format("SamplingOptions.pad_token_id {} is outside the "
                    "vocabulary [0, {})",
                    o.pad_token_id, vocab));
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty()) return InvalidArgument(fmt::format("prompt {} is empty", i));
    for (int32_t tok : prompts[i]) {
      if (tok < 0 || tok >= vocab) {
        return InvalidArgument(
            fmt::format("prompt {}: token id {} is outside the vocabulary "
                        "[0, {})",
                        i, tok, vocab));
      }
    }
  }
  return Status::Ok();
}

struct StepResult {
  std::vector<int64_t> tokens;
  std::vector<float> policy_log_probs;
  std::vector<float> sampling_log_probs;
};

// Picks one token per row of `logits` [n, V] (float32) given one uniform draw per row,
// u [n, 1] float32 on the logits' device. Inverse-CDF sampling on the device. Returns
// [n, 3] float64 (token, policy log-prob, sampling log-prob) on the device. No host
// synchronization: capturable in a CUDA graph.
at::Tensor SampleOnDevice(const at::Tensor& logits, const at::Tensor& u, const SamplingOptions& o) {
  const int64_t n = logits.size(0), vocab = logits.size(1);
  at::Tensor policy = at::log_softmax(logits, -1);
  at::Tensor tokens, sampling_lp;
  if (o.temperature == 0) {
    tokens = logits.argmax(-1, /*keepdim=*/true);
    sampling_lp = at::zeros({n, 1}, logits.options());
  } else {
    at::Tensor scaled = logits / o.temperature;
    const bool truncate = (o.top_k > 0 && o.top_k < vocab) || o.top_p < 1.0;
    at::Tensor order;  // sorted position -> token id (only when truncating)
    if (truncate) {
      auto sorted = scaled.sort(-1, /*descending=*/true);
      scaled = std::get<0>(sorted);
      order = std::get<1>(sorted);
      const float neg_inf = -std::numeric_limits<float>::infinity();
      if (o.top_k > 0 && o.top_k < vocab) scaled.slice(1, o.top_k).fill_(neg_inf);
      if (o.top_p < 1.0) {
        // Drop a token when the tokens ranked above it already carry top_p of the mass;
        // the first token always stays.
        at::Tensor probs = at::softmax(scaled, -1);
        at::Tensor mass_before = probs.cumsum(-1) - probs;
        scaled = scaled.masked_fill(mass_before.ge(o.top_p), neg_inf);
      }
    }
    at::Tensor lp = at::log_softmax(scaled, -1);
    at::Tensor cdf = lp.exp().cumsum(-1);
    at::Tensor pos = cdf.lt(u * cdf.slice(1, vocab - 1)).sum(-1, /*keepdim=*/true);
    // Rounding can push the draw past the last kept token; clamp to it.
    at::Tensor last_kept = scaled.isfinite().sum(-1, /*keepdim=*/true) - 1;
    pos = at::minimum(pos, last_kept);
    sampling_lp = lp.gather(-1, pos);
    tokens = truncate ? order.gather(-1, pos) : pos;
  }
  at::Tensor policy_lp = policy.gather(-1, tokens);
  return at::cat({tokens.to(at::kDouble), policy_lp.to(at::kDouble), sampling_lp.to(at::kDouble)}, 1);
}

// The uniforms of a step as the [n, 1] float32 device tensor SampleOnDevice takes.
at::Tensor UniformsOn(const std::vector<double>& uniforms, at::Device device) {
  return at::tensor(uniforms, at::TensorOptions().dtype(at::kDouble))
      .to(device, at::kFloat)
      .unsqueeze(1);
}

StepResult Unpack(const at::Tensor& packed_device) {
  const at::Tensor packed = packed_device.to(at::kCPU).contiguous();
  StepResult r;
  auto a = packed.accessor<double, 2>();
  for (int64_t i = 0; i < packed.size(0); ++i) {
    r.tokens.push_back(static_cast<int64_t>(a[i][0]));
    r.policy_log_probs.push_back(static_cast<float>(a[i][1]));
    r.sampling_log_probs.push_back(static_cast<float>(a[i][2]));
  }
  return r;
}

// Picks one token per row of `logits` [n, V] (float32) given one uniform draw per row;
// only n numbers cross to and from the host.
StepResult SampleStep(const at::Tensor& logits, const std::vector<double>& uniforms,
                      const SamplingOptions& o) {
  return Unpack(SampleOnDevice(logits, UniformsOn(uniforms, logits.device()), o));
}

using UniformFn = std::function<double(int64_t)>;                        // completion -> u
using AppendFn = std::function<bool(int64_t, const StepResult&, size_t)>;  // true: finished

// Decoding with a KvCache that grows by one column per token (at::cat of the prefix per
// layer and token), or without a cache (the whole sequence every token). Finished rows
// leave the batch.
void DecodeGrowing(DecoderModel& model, const at::Tensor& ids, const at::Tensor& mask,
                   const at::Tensor& fan_out, int64_t n, const SamplingOptions& o,
                   const UniformFn& uniform, const AppendFn& append) {
  const at::Device device = model.device();
  const int64_t max_len = ids.size(1);
  auto long_opts = at::TensorOptions().dtype(at::kLong).device(device);
  // Batch row -> completion index.
  std::vector<int64_t> active(n);
  for (int64_t i = 0; i < n; ++i) active[i] = i;
  KvCache cache;
  at::Tensor full_ids, full_mask;  // without the cache: the whole sequence so far
  at::Tensor logits;               // [rows, V] next-token logits
  if (o.use_kv_cache) {
    // One prefill per prompt, shared by its G samples.
    logits = model.Forward(ids, mask, &cache).select(1, max_len - 1);
    cache.SelectRows(fan_out);
    logits = logits.index_select(0, fan_out);
  } else {
    full_ids = ids.index_select(0, fan_out);
    full_mask = mask.index_select(0, fan_out);
    logits = model.Forward(full_ids, full_mask).select(1, max_len - 1);
  }
  for (int64_t step = 0; step < o.max_new_tokens && !active.empty(); ++step) {
    std::vector<double> uniforms;
    for (int64_t c : active) uniforms.push_back(uniform(c));
    StepResult r = SampleStep(logits, uniforms, o);
    std::vector<int64_t> keep_rows;
    std::vector<int64_t> still_active;
    for (size_t row = 0; row < active.size(); ++row) {
      if (!append(active[row], r, row)) {
        keep_rows.push_back(static_cast<int64_t>(row));
        still_active.push_back(active[row]);
      }
    }
    if (still_active.empty()) break;
    at::Tensor next = at::tensor(r.tokens, at::kLong).to(device).unsqueeze(1);  // [rows, 1]
    if (still_active.size() != active.size()) {
      at::Tensor keep = at::tensor(keep_rows, at::kLong).to(device);
      next = next.index_select(0, keep);
      if (o.use_kv_cache) {
        cache.SelectRows(keep);
      } else {
        full_ids = full_ids.index_select(0, keep);
        full_mask = full_mask.index_select(0, keep);
      }
    }
    active = std::move(still_active);
    at::Tensor ones = at::ones({static_cast<int64_t>(active.size()), 1}, long_opts);
    if (o.use_kv_cache) {
      logits = model.Forward(next, at::cat({cache.attention_mask, ones}, 1), &cache).select(1, 0);
    } else {
      full_ids = at::cat({full_ids, next}, 1);
      full_mask = at::cat({full_mask, ones}, 1);
      logits = model.Forward(full_ids, full_mask).select(1, full_ids.size(1) - 1);
    }
  }
}

#if EGCA_HAVE_CUDA_GRAPHS
// The decode step (DecodeStep + SampleOnDevice on fixed buffers) captured once in a CUDA
// graph and replayed per token. The first kWarmup calls after a Reset run eagerly (cuBLAS
// workspaces and the caching allocator settle on the capture stream, as PyTorch's
// torch.cuda.graphs recipe does); the next one captures the step and replays it.
class DecodeGraph {
 public:
  void Run(const std::function<void()>& step) {
    if (graph_) {
      graph_->replay();
      return;
    }
    if (eager_runs_ < kWarmup) {
      step();
      ++eager_runs_;
      return;
    }
    graph_ = std::make_unique<at::cuda::CUDAGraph>();
    graph_->capture_begin();
    step();
    graph_->capture_end();
    graph_->replay();
  }
  void Reset() {
    graph_.reset();
    eager_runs_ = 0;
  }

 private:
  static constexpr int kWarmup = 2;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
  int eager_runs_ = 0;
};
#endif

// Decoding with a StaticKvCache: the step reads its token ids and uniforms from fixed
// device buffers and writes its result to another, so it can be captured (CUDA graphs) and
// the only per-token traffic is n uniforms in and n x 3 numbers out. Finished rows stay in
// the batch (their results are ignored) until compacting pays: at once without a graph
// (as DecodeGrowing), at half the batch with one (compacting costs a new capture).
void DecodeStatic(DecoderModel& model, const at::Tensor& ids, const at::Tensor& mask,
                  const at::Tensor& fan_out, const SamplingOptions& o, const UniformFn& uniform,
                  const AppendFn& append) {
  const at::Device device = model.device();
  const int64_t max_len = ids.size(1);
  const int64_t n = fan_out.size(0);
  bool use_graph = false;
#if EGCA_HAVE_CUDA_GRAPHS
  use_graph = device.is_cuda() && o.cuda_graph == SamplingOptions::CudaGraph::kAuto;
  std::optional<c10::cuda::CUDAStreamGuard> stream_guard;
  if (use_graph) stream_guard.emplace(c10::cuda::getStreamFromPool(false, device.index()));
  DecodeGraph graph;
#endif
  // One prefill per prompt, shared by its G samples.
  at::Tensor logits;
  StaticKvCache cache;
  {
    KvCache prefill;
    logits = model.Forward(ids, mask, &prefill).select(1, max_len - 1).index_select(0, fan_out);
    prefill.SelectRows(fan_out);
    cache = model.MakeStaticCache(prefill, max_len + std::max<int64_t>(o.max_new_tokens - 1, 1));
  }
  auto long_opts = at::TensorOptions().dtype(at::kLong).device(device);
  at::Tensor next_ids = at::zeros({n, 1}, long_opts);                    // step input
  at::Tensor u = at::zeros({n, 1}, long_opts.dtype(at::kFloat));        // step input
  at::Tensor result = at::zeros({n, 3}, long_opts.dtype(at::kDouble));  // step output
  auto step = [&] {
    at::Tensor packed = SampleOnDevice(model.DecodeStep(next_ids, cache), u, o);
    result.copy_(packed);
    next_ids.copy_(packed.slice(1, 0, 1));
  };
  std::vector<int64_t> rows(n);  // batch row -> completion index, -1 once finished
  for (int64_t i = 0; i < n; ++i) rows[i] = i;
  int64_t live = n;
  for (int64_t t = 0; t < o.max_new_tokens && live > 0; ++t) {
    std::vector<double> uniforms;
    for (int64_t c : rows) uniforms.push_back(c >= 0 ? uniform(c) : 0.0);
    if (t == 0) {
      result.copy_(SampleOnDevice(logits, UniformsOn(uniforms, device), o));
      next_ids.copy_(result.slice(1, 0, 1));
      logits = at::Tensor();
    } else {
      u.copy_(UniformsOn(uniforms, device));
#if EGCA_HAVE_CUDA_GRAPHS
      if (use_graph) {
        graph.Run(step);
      } else {
        step();
      }
#else
      step();
#endif
    }
    const StepResult r = Unpack(result);
    int64_t finished = 0;
    for (size_t row = 0; row < rows.size(); ++row) {
      if (rows[row] < 0) {
        ++finished;
      } else if (append(rows[row], r, row)) {
        rows[row] = -1;
        ++finished;
        --live;
      }
    }
    if (live == 0 || finished == 0) continue;
    if (use_graph && finished * 2 < static_cast<int64_t>(rows.size())) continue;
    std::vector<int64_t> keep;
    std::vector<int64_t> kept_rows;
    for (size_t row = 0; row < rows.size(); ++row) {
      if (rows[row] >= 0) {
        keep.push_back(static_cast<int64_t>(row));
        kept_rows.push_back(rows[row]);
      }
    }
    const at::Tensor keep_t = at::tensor(keep, at::kLong).to(device);
    cache.SelectRows(keep_t);
    next_ids = next_ids.index_select(0, keep_t);
    u = at::zeros({live, 1}, u.options());
    result = at::zeros({live, 3}, result.options());
    rows = std::move(kept_rows);
#if EGCA_HAVE_CUDA_GRAPHS
    graph.Reset();
#endif
  }
}

}  // namespace

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStopToken:
      return "stop_token";
    case FinishReason::kStopString:
      return "stop_string";
    case FinishReason::kMaxTokens:
      return "length";
  }
  return "length";
}

StatusOr<std::vector<Completion>> Generate(DecoderModel& model,
                                           const std::vector<std::vector<int32_t>>& prompts,
                                           const SamplingOptions& o) {
  EGCA_RETURN_IF_ERROR(ValidateOptions(model, prompts, o));
  if (!o.prompt_keys.empty() && o.prompt_keys.size() != prompts.size()) {
    return InvalidArgument(fmt::format("sampling: {} prompt keys for {} prompts",
                                       o.prompt_keys.size(), prompts.size()));
  }
  at::NoGradGuard no_grad;
  const int64_t num_prompts = static_cast<int64_t>(prompts.size());
  const int64_t g = o.num_samples_per_prompt;
  const int64_t n = num_prompts * g;

  std::vector<Completion> out(n);
  std::vector<std::mt19937_64> rngs;
  for (int64_t i = 0; i < n; ++i) {
    out[i].prompt_index = i / g;
    out[i].sample_index = i % g;
    const uint64_t key = o.prompt_keys.empty() ? static_cast<uint64_t>(i / g)
                                               : o.prompt_keys[static_cast<size_t>(i / g)];
    rngs.emplace_back(SplitMix64(SplitMix64(o.seed) ^ SplitMix64(key) ^
                                 (static_cast<uint64_t>(i % g) * 0xD1B54A32D192ED03ull)));
  }
  if (n == 0 || o.max_new_tokens == 0) return out;

  // Left-padded prompt batch, built on the host and moved once.
  int64_t max_len = 0;
  for (const auto& p : prompts) max_len = std::max<int64_t>(max_len, p.size());
  at::Tensor ids = at::full({num_prompts, max_len}, o.pad_token_id, at::kLong);
  at::Tensor mask = at::zeros({num_prompts, max_len}, at::kLong);
  {
    auto ids_a = ids.accessor<int64_t, 2>();
    auto mask_a = mask.accessor<int64_t, 2>();
    for (int64_t i = 0; i < num_prompts; ++i) {
      const int64_t offset = max_len - static_cast<int64_t>(prompts[i].size());
      for (size_t j = 0; j < prompts[i].size(); ++j) {
        ids_a[i][offset + j] = prompts[i][j];
        mask_a[i][offset + j] = 1;
      }
    }
  }
  const at::Device device = model.device();
  ids = ids.to(device);
  mask = mask.to(device);
  auto long_opts = at::TensorOptions().dtype(at::kLong).device(device);
  at::Tensor fan_out = at::arange(num_prompts, long_opts).repeat_interleave(g);

  size_t max_stop_len = 0;
  for (const auto& s : o.stop_strings) max_stop_len = std::max(max_stop_len, s.size());
  std::vector<size_t> decoded_len(n, 0);
  // Appends row `row` of a step's result to completion `ci`; true when `ci` is finished.
  auto append = [&](int64_t ci, const StepResult& r, size_t row) {
    Completion& c = out[ci];
    const int32_t tok = static_cast<int32_t>(r.tokens[row]);
    c.token_ids.push_back(tok);
    c.policy_log_probs.push_back(r.policy_log_probs[row]);
    c.sampling_log_probs.push_back(r.sampling_log_probs[row]);
    if (std::find(o.stop_token_ids.begin(), o.stop_token_ids.end(), tok) !=
        o.stop_token_ids.end()) {
      c.finish_reason = FinishReason::kStopToken;
      return true;
    }
    if (!o.stop_strings.empty()) {
      c.text = o.decode(c.token_ids);
      // Only the tail can hold a new match; earlier text was checked on earlier steps
      // (minus a margin, since a multi-byte character may decode differently once whole).
      const size_t from =
          decoded_len[ci] > max_stop_len + 4 ? decoded_len[ci] - max_stop_len - 4 : 0;
      size_t cut = std::string::npos;
      for (const auto& s : o.stop_strings) cut = std::min(cut, c.text.find(s, from));
      decoded_len[ci] = c.text.size();
      if (cut != std::string::npos) {
        c.text.resize(cut);
        c.finish_reason = FinishReason::kStopString;
        return true;
      }
    }
    if (static_cast<int64_t>(c.token_ids.size()) >= o.max_new_tokens) {
      c.finish_reason = FinishReason::kMaxTokens;
      return true;
    }
    return false;
  };
  auto uniform = [&](int64_t ci) { return o.temperature == 0 ? 0.0 : NextUniform(rngs[ci]); };

  if (o.use_kv_cache && o.static_cache) {
    DecodeStatic(model, ids, mask, fan_out, o, uniform, append);
  } else {
    DecodeGrowing(model, ids, mask, fan_out, n, o, uniform, append);
  }
  if (o.decode) {
    for (auto& c : out) {
      if (c.finish_reason != FinishReason::kStopString) c.text = o.decode(c.token_ids);
    }
  }
  return out;
}

std::vector<int32_t> DefaultStopTokenIds(const Tokenizer& tokenizer, int64_t eos_token_id) {
  std::vector<int32_t> ids;
  for (const char* stop : {"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>"}) {
    if (auto id = tokenizer.TokenId(stop)) ids.push_back(*id);
  }
  if (eos_token_id >= 0 && std::find(ids.begin(), ids.end(), eos_token_id) == ids.end()) {
    ids.push_back(static_cast<int32_t>(eos_token_id));
  }
  return ids;
}

}  // namespace egca::trainer
