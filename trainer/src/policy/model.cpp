#include "egca/trainer/policy/model.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <string>

#include "chunked_log_probs.h"
#include "model_layers.h"

namespace egca::trainer {

// ---- Layer math -------------------------------------------------------------------------
namespace layers {

at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  at::Tensor h = x.to(at::kFloat);
  at::Tensor variance = h.pow(2).mean(-1, /*keepdim=*/true);
  h = h * at::rsqrt(variance + eps);
  return weight * h.to(x.scalar_type());
}

std::pair<at::Tensor, at::Tensor> RotaryCosSin(const at::Tensor& positions, int64_t head_dim,
                                               double theta) {
  auto opts = at::TensorOptions().dtype(at::kFloat).device(positions.device());
  // Same float32 arithmetic as transformers' default rope init, so long positions round
  // the same way as in the model the weights were trained with.
  at::Tensor exponent = at::arange(0, head_dim, 2, opts.dtype(at::kLong)).to(at::kFloat) /
                        static_cast<double>(head_dim);
  at::Tensor inv_freq = 1.0 / at::pow(theta, exponent);                  // [D/2]
  at::Tensor freqs = positions.to(at::kFloat).unsqueeze(-1) * inv_freq;  // [B, T, D/2]
  at::Tensor emb = at::cat({freqs, freqs}, -1);                          // [B, T, D]
  return {emb.cos(), emb.sin()};
}

at::Tensor ApplyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  at::Tensor c = cos.unsqueeze(1).to(x.scalar_type());  // [B, 1, T, D]
  at::Tensor s = sin.unsqueeze(1).to(x.scalar_type());
  at::Tensor rotated = at::cat({-x.slice(-1, half), x.slice(-1, 0, half)}, -1);
  return x * c + rotated * s;
}

at::Tensor RepeatKv(const at::Tensor& x, int64_t n_rep) {
  if (n_rep == 1) return x;
  const int64_t b = x.size(0), hkv = x.size(1), t = x.size(2), d = x.size(3);
  return x.unsqueeze(2).expand({b, hkv, n_rep, t, d}).reshape({b, hkv * n_rep, t, d});
}

at::Tensor PositionsFromMask(const at::Tensor& mask, int64_t t_new) {
  at::Tensor pos = mask.to(at::kLong).cumsum(1) - 1;
  pos.clamp_min_(0);
  return pos.slice(1, pos.size(1) - t_new);
}

at::Tensor AttentionBias(const at::Tensor& mask, int64_t t_new) {
  const int64_t t_total = mask.size(1);
  auto long_opts = at::TensorOptions().dtype(at::kLong).device(mask.device());
  at::Tensor q_pos = at::arange(t_total - t_new, t_total, long_opts).unsqueeze(1);  // [T, 1]
  at::Tensor k_pos = at::arange(0, t_total, long_opts).unsqueeze(0);                // [1, S]
  at::Tensor causal = k_pos.le(q_pos);                                              // [T, S]
  at::Tensor allowed = causal.unsqueeze(0).logical_and(mask.to(at::kBool).unsqueeze(1));
  at::Tensor bias = at::zeros(allowed.sizes(), long_opts.dtype(at::kFloat));
  bias.masked_fill_(allowed.logical_not(), std::numeric_limits<float>::lowest());
  return bias.unsqueeze(1);  // [B, 1, T, S]
}

at::Tensor Attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& bias) {
#if TORCH_VERSION_MAJOR >= 2
  // LibTorch 2.x: the fused kernel (flash / memory-efficient on CUDA) never materializes the
  // [B, H, T, S] float32 scores: on an H100 at Qwen2.5-0.5B shape the step went from 220 ms
  // to 133 ms and peak memory from 43.7 to 28 GiB. The mask must be in q's dtype; a
  // finite "minus infinity" keeps fully masked rows (left padding) finite, as the explicit
  // path's float lowest() does.
  if (bias.defined()) {
    const double lowest = q.scalar_type() == at::kHalf ? -65504.0 : -1e30;
    at::Tensor mask = at::zeros(bias.sizes(), q.options()).masked_fill_(bias.lt(0), lowest);
    return at::scaled_dot_product_attention(q, k, v, mask, 0.0, false);
  }
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, false);
#endif
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)).to(at::kFloat) * scale;
  if (bias.defined()) scores = scores + bias;
  at::Tensor probs = at::softmax(scores, -1).to(v.scalar_type());
  return at::matmul(probs, v);
}

}  // namespace layers

// ---- Modules ----------------------------------------------------------------------------
// Each class registers parameters under the names transformers uses, so the module tree's
// named_parameters() is the checkpoint's tensor list.

class Projection : public torch::nn::Module {
 public:
  Projection(int64_t in, int64_t out, bool bias) {
    weight = register_parameter("weight", at::zeros({out, in}));
    if (bias) this->bias = register_parameter("bias", at::zeros({out}));
  }
  at::Tensor operator()(const at::Tensor& x) const { return at::linear(x, weight, bias); }
  at::Tensor weight;
  at::Tensor bias;  // undefined when absent
};

class Norm : public torch::nn::Module {
 public:
  Norm(int64_t dim, double eps) : eps_(eps) {
    weight = register_parameter("weight", at::ones({dim}));
  }
  at::Tensor operator()(const at::Tensor& x) const { return layers::RmsNorm(x, weight, eps_); }
  at::Tensor weight;

 private:
  double eps_;
};

class SelfAttention : public torch::nn::Module {
 public:
  explicit SelfAttention(const ModelConfig& c) : c_(c) {
    const int64_t q_dim = c.num_attention_heads * c.head_dim;
    const int64_t kv_dim = c.num_key_value_heads * c.head_dim;
    q_proj =
        register_module("q_proj", std::make_shared<Projection>(c.hidden_size, q_dim, c.qkv_bias()));
    k_proj = register_module("k_proj",
                             std::make_shared<Projection>(c.hidden_size, kv_dim, c.qkv_bias()));
    v_proj = register_module("v_proj",
                             std::make_shared<Projection>(c.hidden_size, kv_dim, c.qkv_bias()));
    o_proj = register_module("o_proj",
                             std::make_shared<Projection>(q_dim, c.hidden_size, c.o_proj_bias()));
    if (c.qk_norm()) {
      q_norm = register_module("q_norm", std::make_shared<Norm>(c.head_dim, c.rms_norm_eps));
      k_norm = register_module("k_norm", std::make_shared<Norm>(c.head_dim, c.rms_norm_eps));
    }
  }

  // x [B, T, hidden]; cos/sin [B, T, D]; bias [B, 1, T, S]. Appends to cache slots when
  // given (keys/values of the cached prefix come first).
  at::Tensor operator()(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                        const at::Tensor& bias, at::Tensor* cached_k, at::Tensor* cached_v) {
    const int64_t b = x.size(0), t = x.size(1), d = c_.head_dim;
    at::Tensor q = (*q_proj)(x).view({b, t, c_.num_attention_heads, d});
    at::Tensor k = (*k_proj)(x).view({b, t, c_.num_key_value_heads, d});
    at::Tensor v = (*v_proj)(x).view({b, t, c_.num_key_value_heads, d});
    if (q_norm) {  // Qwen3 normalizes each head before the rotation
      q = (*q_norm)(q);
      k = (*k_norm)(k);
    }
    q = layers::ApplyRotary(q.transpose(1, 2), cos, sin);
    k = layers::ApplyRotary(k.transpose(1, 2), cos, sin);
    v = v.transpose(1, 2);
    if (cached_k != nullptr) {
      if (cached_k->defined()) {
        k = at::cat({*cached_k, k}, 2);
        v = at::cat({*cached_v, v}, 2);
      }
      *cached_k = k;
      *cached_v = v;
    }
    const int64_t n_rep = c_.kv_group_size();
    at::Tensor out =
        layers::Attention(q, layers::RepeatKv(k, n_rep), layers::RepeatKv(v, n_rep), bias);
    out = out.transpose(1, 2).reshape({b, t, c_.num_attention_heads * d});
    return (*o_proj)(out);
  }

  // One new token per row against a StaticKvCache layer: x [B, 1, hidden]; cos/sin
  // [B, 1, D]; bias [B, 1, 1, capacity]; column [1]. Writes k/v at `column` in place.
  at::Tensor Decode(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                    const at::Tensor& bias, at::Tensor& cache_k, at::Tensor& cache_v,
                    const at::Tensor& column) {
    const int64_t b = x.size(0), d = c_.head_dim;
    at::Tensor q = (*q_proj)(x).view({b, 1, c_.num_attention_heads, d});
    at::Tensor k = (*k_proj)(x).view({b, 1, c_.num_key_value_heads, d});
    at::Tensor v = (*v_proj)(x).view({b, 1, c_.num_key_value_heads, d});
    if (q_norm) {
      q = (*q_norm)(q);
      k = (*k_norm)(k);
    }
    q = layers::ApplyRotary(q.transpose(1, 2), cos, sin);
    k = layers::ApplyRotary(k.transpose(1, 2), cos, sin);
    cache_k.index_copy_(2, column, k);
    cache_v.index_copy_(2, column, v.transpose(1, 2));
    const int64_t n_rep = c_.kv_group_size();
    at::Tensor out = layers::Attention(q, layers::RepeatKv(cache_k, n_rep),
                                       layers::RepeatKv(cache_v, n_rep), bias);
    out = out.transpose(1, 2).reshape({b, 1, c_.num_attention_heads * d});
    return (*o_proj)(out);
  }

  std::shared_ptr<Projection> q_proj, k_proj, v_proj, o_proj;
  std::shared_ptr<Norm> q_norm, k_norm;  // Qwen3 only

 private:
  ModelConfig c_;
};

class Mlp : public torch::nn::Module {
 public:
  explicit Mlp(const ModelConfig& c) {
    gate_proj = register_module(
        "gate_proj", std::make_shared<Projection>(c.hidden_size, c.intermediate_size, false));
    up_proj = register_module(
        "up_proj", std::make_shared<Projection>(c.hidden_size, c.intermediate_size, false));
    down_proj = register_module(
        "down_proj", std::make_shared<Projection>(c.intermediate_size, c.hidden_size, false));
  }
  at::Tensor operator()(const at::Tensor& x) const {
    return (*down_proj)(at::silu((*gate_proj)(x)) * (*up_proj)(x));
  }
  std::shared_ptr<Projection> gate_proj, up_proj, down_proj;
};

class DecoderLayer : public torch::nn::Module {
 public:
  explicit DecoderLayer(const ModelConfig& c) {
    self_attn = register_module("self_attn", std::make_shared<SelfAttention>(c));
    mlp = register_module("mlp", std::make_shared<Mlp>(c));
    input_layernorm =
        register_module("input_layernorm", std::make_shared<Norm>(c.hidden_size, c.rms_norm_eps));
    post_attention_layernorm = register_module(
        "post_attention_layernorm", std::make_shared<Norm>(c.hidden_size, c.rms_norm_eps));
  }
  std::shared_ptr<SelfAttention> self_attn;
  std::shared_ptr<Mlp> mlp;
  std::shared_ptr<Norm> input_layernorm, post_attention_layernorm;
};

class DecoderBody : public torch::nn::Module {
 public:
  explicit DecoderBody(const ModelConfig& c) {
    embed_weight = register_module("embed_tokens", std::make_shared<torch::nn::Module>())
                       ->register_parameter("weight", at::zeros({c.vocab_size, c.hidden_size}));
    // A plain container module named "layers" whose children are "0", "1", ... gives the
    // parameter names "model.layers.N.*".
    auto container = register_module("layers", std::make_shared<torch::nn::Module>());
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
      layers.push_back(
          container->register_module(std::to_string(i), std::make_shared<DecoderLayer>(c)));
    }
    norm = register_module("norm", std::make_shared<Norm>(c.hidden_size, c.rms_norm_eps));
  }
  at::Tensor embed_weight;
  std::vector<std::shared_ptr<DecoderLayer>> layers;
  std::shared_ptr<Norm> norm;
};

// ---- KvCache ----------------------------------------------------------------------------

void KvCache::SelectRows(const at::Tensor& rows) {
  for (auto& k : keys) {
    if (k.defined()) k = k.index_select(0, rows);
  }
  for (auto& v : values) {
    if (v.defined()) v = v.index_select(0, rows);
  }
  if (attention_mask.defined()) attention_mask = attention_mask.index_select(0, rows);
}

void StaticKvCache::SelectRows(const at::Tensor& rows) {
  for (auto& k : keys) k = k.index_select(0, rows);
  for (auto& v : values) v = v.index_select(0, rows);
  mask = mask.index_select(0, rows);
  positions = positions.index_select(0, rows);
}

// ---- DecoderModel -----------------------------------------------------------------------

DecoderModel::DecoderModel(const ModelConfig& config) : config_(config) {
  TORCH_CHECK(config.Validate().ok(),
              "DecoderModel: invalid config: ", config.Validate().message());
  body_ = register_module("model", std::make_shared<DecoderBody>(config));
  if (!config.tie_word_embeddings) {
    lm_head_ = register_module(
        "lm_head", std::make_shared<Projection>(config.hidden_size, config.vocab_size, false));
  }
}

DecoderModel::~DecoderModel() = default;

at::Device DecoderModel::device() const { return body_->embed_weight.device(); }
at::ScalarType DecoderModel::dtype() const { return body_->embed_weight.scalar_type(); }

at::Tensor DecoderModel::lm_head_weight() const {
  return lm_head_ ? lm_head_->weight : body_->embed_weight;
}

void DecoderModel::InitRandom(uint64_t seed, double stddev) {
  at::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  for (auto& item : named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    at::Tensor& p = item.value();
    at::Tensor values = at::empty(p.sizes(), at::TensorOptions().dtype(at::kFloat));
    values.normal_(0.0, stddev, gen);
    const bool is_norm =
        name.size() >= 11 && name.compare(name.size() - 11, 11, "norm.weight") == 0;
    if (is_norm) values.add_(1.0);
    p.copy_(values.to(p.device(), p.scalar_type()));
  }
}

namespace {

// The decoder up to and including the final RMSNorm: [B, T, hidden] in the parameter dtype.
// Forward and TokenLogProbs apply lm_head to what they need of it.
at::Tensor FinalHiddenStates(DecoderBody& body, const ModelConfig& config,
                             const at::Tensor& input_ids, const at::Tensor& attention_mask,
                             KvCache* cache) {
  TORCH_CHECK(input_ids.dim() == 2, "Forward: input_ids must be [B, T], got ", input_ids.sizes());
  const int64_t b = input_ids.size(0), t = input_ids.size(1);
  const int64_t past = cache != nullptr ? cache->length() : 0;
  at::Tensor mask = attention_mask;
  if (!mask.defined()) {
    mask = at::ones({b, past + t}, input_ids.options().dtype(at::kLong));
    if (past > 0) mask.slice(1, 0, past).copy_(cache->attention_mask);
  }
  TORCH_CHECK(mask.dim() == 2 && mask.size(0) == b && mask.size(1) == past + t,
              "Forward: attention_mask must be [B, T_cached + T] = [", b, ", ", past + t, "], got ",
              mask.sizes());
  mask = mask.to(at::kLong);

  at::Tensor positions = layers::PositionsFromMask(mask, t);
  auto [cos, sin] = layers::RotaryCosSin(positions, config.head_dim, config.rope_theta);
  at::Tensor bias = layers::AttentionBias(mask, t);

  if (cache != nullptr) {
    cache->keys.resize(config.num_hidden_layers);
    cache->values.resize(config.num_hidden_layers);
  }
  at::Tensor h = at::embedding(body.embed_weight, input_ids);
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    DecoderLayer& layer = *body.layers[i];
    at::Tensor attn =
        (*layer.self_attn)((*layer.input_layernorm)(h), cos, sin, bias,
                           cache ? &cache->keys[i] : nullptr, cache ? &cache->values[i] : nullptr);
    h = h + attn;
    h = h + (*layer.mlp)((*layer.post_attention_layernorm)(h));
  }
  if (cache != nullptr) cache->attention_mask = mask;
  return (*body.norm)(h);
}

}  // namespace

StaticKvCache DecoderModel::MakeStaticCache(const KvCache& prefill, int64_t capacity) const {
  const int64_t rows = prefill.attention_mask.size(0), cached = prefill.length();
  TORCH_CHECK(capacity >= cached, "MakeStaticCache: capacity ", capacity, " < cached ", cached);
  StaticKvCache c;
  for (size_t i = 0; i < prefill.keys.size(); ++i) {
    const at::Tensor& k = prefill.keys[i];
    at::Tensor sk = at::zeros({rows, k.size(1), capacity, k.size(3)}, k.options());
    at::Tensor sv = at::zeros_like(sk);
    sk.slice(2, 0, cached).copy_(k);
    sv.slice(2, 0, cached).copy_(prefill.values[i]);
    c.keys.push_back(sk);
    c.values.push_back(sv);
  }
  c.mask = at::zeros({rows, capacity}, prefill.attention_mask.options().dtype(at::kLong));
  c.mask.slice(1, 0, cached).copy_(prefill.attention_mask);
  // The next token's position id: the count of real tokens before it (PositionsFromMask).
  c.positions = prefill.attention_mask.to(at::kLong).sum(1);
  c.column = at::full({1}, cached, c.mask.options());
  return c;
}

at::Tensor DecoderModel::DecodeStep(const at::Tensor& input_ids, StaticKvCache& cache) {
  const int64_t b = input_ids.size(0), capacity = cache.capacity();
  TORCH_CHECK(input_ids.dim() == 2 && input_ids.size(1) == 1 && b == cache.rows(),
              "DecodeStep: input_ids must be [", cache.rows(), ", 1], got ", input_ids.sizes());
  cache.mask.index_fill_(1, cache.column, 1);
  auto [cos, sin] =
      layers::RotaryCosSin(cache.positions.unsqueeze(1), config_.head_dim, config_.rope_theta);
  // 0 where the key column holds a real token (earlier columns, or this one), float32
  // lowest elsewhere: AttentionBias for one query at `column` (later columns are empty).
  at::Tensor bias = at::zeros({b, 1, 1, capacity}, cos.options())
                        .masked_fill_(cache.mask.eq(0).view({b, 1, 1, capacity}),
                                      std::numeric_limits<float>::lowest());
  at::Tensor h = at::embedding(body_->embed_weight, input_ids);  // [B, 1, hidden]
  for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
    DecoderLayer& layer = *body_->layers[i];
    h = h + layer.self_attn->Decode((*layer.input_layernorm)(h), cos, sin, bias, cache.keys[i],
                                    cache.values[i], cache.column);
    h = h + (*layer.mlp)((*layer.post_attention_layernorm)(h));
  }
  h = (*body_->norm)(h);
  cache.column.add_(1);
  cache.positions.add_(1);
  return at::linear(h.select(1, 0), lm_head_weight()).to(at::kFloat);  // [B, V]
}

at::Tensor DecoderModel::Forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                 KvCache* cache) {
  at::Tensor h = FinalHiddenStates(*body_, config_, input_ids, attention_mask, cache);
  return at::linear(h, lm_head_weight()).to(at::kFloat);
}

namespace {

// The tile of the logits that chunked log-probs work through (set_logit_chunk_bytes). On
// the CPU a few MiB, so that the elementwise passes over a tile stay in cache; on a GPU
// 1 GiB, so that each product is large.
LogitTile TileFor(int64_t chunk_bytes, at::Device device, int64_t rows, int64_t vocab_size) {
  constexpr int64_t kCpuTileBytes = int64_t{1} << 20;
  constexpr int64_t kGpuTileBytes = int64_t{1} << 30;
  const int64_t bytes = chunk_bytes != DecoderModel::kAutoLogitChunk
                            ? chunk_bytes
                            : (device.is_cpu() ? kCpuTileBytes : kGpuTileBytes);
  return LogitTileFor(bytes, rows, vocab_size);
}

}  // namespace

at::Tensor DecoderModel::TokenLogProbs(const at::Tensor& input_ids,
                                       const at::Tensor& attention_mask) {
  const int64_t b = input_ids.size(0), t = input_ids.size(1);
  at::Tensor out = at::zeros({b, t}, input_ids.options().dtype(at::kFloat));
  if (t < 2) return out;
  at::Tensor h = FinalHiddenStates(*body_, config_, input_ids, attention_mask, nullptr);
  // Only positions 0..T-2 predict a token, so only they go through lm_head.
  at::Tensor targets = input_ids.slice(1, 1);  // [B, T-1]
  at::Tensor lp;
  if (logit_chunk_bytes_ == 0) {
    // Slicing the [B, T, V] logits instead would make log_softmax copy the strided slice
    // and backward zero-fill a [B, T, V] gradient. log_softmax + gather rather than
    // logit - logsumexp: one fused backward kernel over [B, T, V].
    at::Tensor logits = at::linear(h.slice(1, 0, t - 1), lm_head_weight()).to(at::kFloat);
    lp = at::log_softmax(logits, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1);
  } else {
    const int64_t hidden = h.size(2);
    at::Tensor rows = h.slice(1, 0, t - 1).reshape({b * (t - 1), hidden});  // [B*(T-1), H]
    lp = ChunkedTokenLogProbs(rows, lm_head_weight(), targets.reshape({-1}),
                              TileFor(logit_chunk_bytes_, h.device(), rows.size(0), config_.vocab_size), /*want_entropy=*/false)
             .log_probs.view({b, t - 1});
  }
  if (attention_mask.defined()) {
    // A token counts when it is real and some real token precedes it.
    at::Tensor m = attention_mask.to(at::kLong);
    at::Tensor seen_before = m.cumsum(1).slice(1, 0, t - 1).gt(0);
    at::Tensor valid = m.slice(1, 1).gt(0).logical_and(seen_before);
    lp = lp * valid.to(at::kFloat);
  }
  return at::cat({out.slice(1, 0, 1), lp}, 1);
}

CompletionLogProbs DecoderModel::ScoreCompletions(
    const std::vector<std::vector<int32_t>>& prompts,
    const std::vector<std::vector<int32_t>>& completions, bool want_entropy) {
  TORCH_CHECK(prompts.size() == completions.size(), "ScoreCompletions: ", prompts.size(),
              " prompts but ", completions.size(), " completions");
  const int64_t n = static_cast<int64_t>(prompts.size());
  int64_t max_total = 1, max_completion = 0;
  for (int64_t i = 0; i < n; ++i) {
    TORCH_CHECK(!prompts[i].empty(), "ScoreCompletions: prompt ", i, " is empty");
    max_total = std::max<int64_t>(max_total, prompts[i].size() + completions[i].size());
    max_completion = std::max<int64_t>(max_completion, completions[i].size());
  }
  const int64_t width = std::max<int64_t>(max_completion, 1);
  // Built on the CPU in one go, then moved: one transfer instead of N small ones.
  // `index` holds, per completion token, the position whose hidden state predicts it (the
  // token before it), so only those rows go through lm_head: the prompt's positions never
  // make [*, V] logits (at Qwen scale a 1,000-token prompt would be 600 MB of float32 logits
  // per sample, forward and backward).
  at::Tensor ids = at::zeros({n, max_total}, at::kLong);
  at::Tensor mask = at::zeros({n, max_total}, at::kLong);
  at::Tensor index = at::zeros({n, width}, at::kLong);
  at::Tensor targets = at::zeros({n, width}, at::kLong);
  at::Tensor out_mask = at::zeros({n, width}, at::kFloat);
  auto ids_a = ids.accessor<int64_t, 2>();
  auto mask_a = mask.accessor<int64_t, 2>();
  auto index_a = index.accessor<int64_t, 2>();
  auto targets_a = targets.accessor<int64_t, 2>();
  auto out_mask_a = out_mask.accessor<float, 2>();
  for (int64_t i = 0; i < n; ++i) {
    int64_t col = 0;
    for (int32_t tok : prompts[i]) ids_a[i][col] = tok, mask_a[i][col++] = 1;
    for (size_t j = 0; j < completions[i].size(); ++j) {
      index_a[i][j] = col - 1;
      targets_a[i][j] = completions[i][j];
      out_mask_a[i][j] = 1.0f;
      ids_a[i][col] = completions[i][j], mask_a[i][col++] = 1;
    }
  }
  const at::Device dev = device();
  at::Tensor h = FinalHiddenStates(*body_, config_, ids.to(dev), mask.to(dev), nullptr);  // [N, T, H]
  const int64_t hidden = h.size(2);
  CompletionLogProbs out;
  if (logit_chunk_bytes_ == 0) {
    // Every (row, column) of [N, W] through lm_head and one [N, W, V] log-softmax.
    at::Tensor rows = h.gather(1, index.to(dev).unsqueeze(-1).expand({n, width, hidden}));  // [N, W, H]
    at::Tensor logits = at::linear(rows, lm_head_weight()).to(at::kFloat);                 // [N, W, V]
    at::Tensor log_softmax = at::log_softmax(logits, -1);
    out_mask = out_mask.to(dev);
    at::Tensor lp = log_softmax.gather(-1, targets.to(dev).unsqueeze(-1)).squeeze(-1);
    out.log_probs = (lp * out_mask).slice(1, 0, max_completion);
    out.mask = out_mask.slice(1, 0, max_completion);
    if (want_entropy) {
      at::NoGradGuard no_grad;
      at::Tensor ls = log_softmax.detach();
      out.entropy = (-(ls.exp() * ls).sum(-1) * out_mask).slice(1, 0, max_completion);
    }
    return out;
  }
  // Only the M real completion tokens go through lm_head, in chunks: `source` is the row of
  // h ([N * T, H] flat) that predicts each, `dest` its cell of the [N, W] result.
  int64_t m = 0;
  for (const auto& c : completions) m += static_cast<int64_t>(c.size());
  at::Tensor source = at::empty({m}, at::kLong), dest = at::empty({m}, at::kLong),
             flat_targets = at::empty({m}, at::kLong);
  {
    auto src_a = source.accessor<int64_t, 1>();
    auto dst_a = dest.accessor<int64_t, 1>();
    auto tgt_a = flat_targets.accessor<int64_t, 1>();
    int64_t k = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < completions[i].size(); ++j, ++k) {
        src_a[k] = i * max_total + index_a[i][static_cast<int64_t>(j)];
        dst_a[k] = i * width + static_cast<int64_t>(j);
        tgt_a[k] = completions[i][j];
      }
    }
  }
  const at::Tensor rows = h.reshape({n * max_total, hidden}).index_select(0, source.to(dev));  // [M, H]
  const at::Tensor dest_dev = dest.to(dev);
  ChunkedLogProbs lp = ChunkedTokenLogProbs(rows, lm_head_weight(), flat_targets.to(dev),
                                            TileFor(logit_chunk_bytes_, dev, m, config_.vocab_size),
                                            want_entropy);
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(dev);
  out.log_probs = at::zeros({n * width}, f32).index_copy(0, dest_dev, lp.log_probs)
                      .view({n, width})
                      .slice(1, 0, max_completion);
  out.mask = out_mask.to(dev).slice(1, 0, max_completion);
  if (want_entropy) {
    out.entropy = at::zeros({n * width}, f32).index_copy(0, dest_dev, lp.entropy)
                      .view({n, width})
                      .slice(1, 0, max_completion);
  }
  return out;
}

}  // namespace egca::trainer
