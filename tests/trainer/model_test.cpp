#include "egca/trainer/policy/model.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <set>
#include <string>
#include <vector>

#include "model_test_util.h"

namespace egca::trainer {
namespace {

using testing::TinyConfig;

std::set<std::string> ParamNames(DecoderModel& m) {
  std::set<std::string> names;
  for (const auto& p : m.named_parameters(true)) names.insert(p.key());
  return names;
}

TEST(DecoderModel, ParameterNamesFollowHuggingFacePerFamily) {
  ModelConfig qwen2 = TinyConfig(ModelFamily::kQwen2);  // tied, q/k/v biases
  DecoderModel m2(qwen2);
  auto names = ParamNames(m2);
  EXPECT_TRUE(names.count("model.embed_tokens.weight"));
  EXPECT_TRUE(names.count("model.layers.1.self_attn.q_proj.bias"));
  EXPECT_TRUE(names.count("model.layers.1.self_attn.v_proj.bias"));
  EXPECT_FALSE(names.count("model.layers.1.self_attn.o_proj.bias"));
  EXPECT_FALSE(names.count("lm_head.weight"));
  EXPECT_TRUE(names.count("model.norm.weight"));
  // 1 embedding + 2 x (4 attn weights + 3 biases + 3 mlp + 2 norms) + final norm.
  EXPECT_EQ(names.size(), 1u + 2 * 12 + 1);

  DecoderModel m3(TinyConfig(ModelFamily::kQwen3));  // untied, q/k norm, no biases
  names = ParamNames(m3);
  EXPECT_TRUE(names.count("model.layers.0.self_attn.q_norm.weight"));
  EXPECT_TRUE(names.count("model.layers.0.self_attn.k_norm.weight"));
  EXPECT_FALSE(names.count("model.layers.0.self_attn.q_proj.bias"));
  EXPECT_TRUE(names.count("lm_head.weight"));
  EXPECT_EQ(names.size(), 1u + 2 * 11 + 1 + 1);

  ModelConfig llama = TinyConfig(ModelFamily::kLlama);
  DecoderModel ml(llama);
  names = ParamNames(ml);
  EXPECT_FALSE(names.count("model.layers.0.self_attn.q_norm.weight"));
  EXPECT_FALSE(names.count("model.layers.0.self_attn.q_proj.bias"));
  EXPECT_TRUE(names.count("model.layers.0.mlp.gate_proj.weight"));
  EXPECT_EQ(names.size(), 1u + 2 * 9 + 1 + 1);

  auto params = ml.named_parameters(true);
  EXPECT_EQ(params["model.layers.0.self_attn.k_proj.weight"].sizes(),
            (std::vector<int64_t>{2 * 16, 64}));
  EXPECT_EQ(params["model.layers.0.mlp.down_proj.weight"].sizes(), (std::vector<int64_t>{64, 128}));
}

TEST(DecoderModel, InitRandomIsDeterministic) {
  ModelConfig c = TinyConfig(ModelFamily::kQwen3);
  DecoderModel a(c), b(c), d(c);
  a.InitRandom(7);
  b.InitRandom(7);
  d.InitRandom(8);
  auto pa = a.named_parameters(true), pb = b.named_parameters(true), pd = d.named_parameters(true);
  for (const auto& p : pa) {
    EXPECT_TRUE(at::equal(p.value(), pb[p.key()])) << p.key();
    EXPECT_FALSE(at::equal(p.value(), pd[p.key()])) << p.key();
  }
}

class KvCacheTest : public ::testing::TestWithParam<ModelFamily> {};

TEST_P(KvCacheTest, IncrementalDecodingMatchesFullRecomputation) {
  at::NoGradGuard no_grad;
  DecoderModel m(TinyConfig(GetParam()));
  m.InitRandom(1, 0.05);
  at::Tensor ids = at::randint(0, 512, {3, 12}, at::kLong);
  at::Tensor full = m.Forward(ids);  // [3, 12, V]

  KvCache cache;
  at::Tensor prefix = m.Forward(ids.slice(1, 0, 5), {}, &cache);
  EXPECT_EQ(cache.length(), 5);
  std::vector<at::Tensor> steps = {prefix};
  for (int64_t t = 5; t < 12; ++t) steps.push_back(m.Forward(ids.slice(1, t, t + 1), {}, &cache));
  at::Tensor incremental = at::cat(steps, 1);
  EXPECT_EQ(cache.length(), 12);
  EXPECT_LE((incremental - full).abs().max().item<float>(), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Families, KvCacheTest,
                         ::testing::Values(ModelFamily::kLlama, ModelFamily::kQwen2,
                                           ModelFamily::kQwen3),
                         [](const auto& info) { return std::string(ModelFamilyName(info.param)); });

// DecodeStep against Forward with a growing KvCache, token by token from the same
// left-padded prefill: the same logits, written into the same buffers every step.
TEST(DecoderModel, StaticCacheDecodeStepMatchesTheGrowingCache) {
  at::NoGradGuard no_grad;
  DecoderModel m(TinyConfig(ModelFamily::kQwen3));
  m.InitRandom(21, 0.1);
  at::Tensor ids = at::randint(1, 512, {3, 6}, at::kLong);
  at::Tensor mask = at::ones({3, 6}, at::kLong);
  mask[1][0] = 0;
  mask[1][1] = 0;  // row 1: a shorter, left-padded prompt
  KvCache growing;
  m.Forward(ids, mask, &growing);
  StaticKvCache fixed = m.MakeStaticCache(growing, 6 + 5);
  std::vector<const void*> buffers;
  for (const auto& k : fixed.keys) buffers.push_back(k.data_ptr());
  at::Tensor next = at::randint(1, 512, {3, 1}, at::kLong);
  for (int step = 0; step < 5; ++step) {
    at::Tensor ones = at::ones({3, 1}, at::kLong);
    at::Tensor want = m.Forward(next, at::cat({growing.attention_mask, ones}, 1), &growing).select(1, 0);
    at::Tensor got = m.DecodeStep(next, fixed);
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_LE((got - want).abs().max().item<double>(), 1e-5) << "step " << step;
    next = got.argmax(-1, true);
  }
  EXPECT_EQ(fixed.column.item<int64_t>(), 11);
  EXPECT_EQ(fixed.positions[1].item<int64_t>(), 4 + 5);
  for (size_t i = 0; i < fixed.keys.size(); ++i) EXPECT_EQ(fixed.keys[i].data_ptr(), buffers[i]);
}

TEST(DecoderModel, LeftAndRightPaddingMatchUnpaddedRows) {
  at::NoGradGuard no_grad;
  DecoderModel m(TinyConfig(ModelFamily::kQwen2));
  m.InitRandom(2, 0.05);
  at::Tensor seq = at::randint(0, 512, {1, 6}, at::kLong);
  at::Tensor alone = m.Forward(seq);  // [1, 6, V]

  at::Tensor pad = at::zeros({1, 3}, at::kLong);
  at::Tensor left_ids = at::cat({pad, seq}, 1);
  at::Tensor left_mask = at::cat({at::zeros({1, 3}, at::kLong), at::ones({1, 6}, at::kLong)}, 1);
  at::Tensor left = m.Forward(left_ids, left_mask).slice(1, 3);
  EXPECT_LE((left - alone).abs().max().item<float>(), 1e-5);

  at::Tensor right_ids = at::cat({seq, pad}, 1);
  at::Tensor right_mask = at::cat({at::ones({1, 6}, at::kLong), at::zeros({1, 3}, at::kLong)}, 1);
  at::Tensor right = m.Forward(right_ids, right_mask).slice(1, 0, 6);
  EXPECT_LE((right - alone).abs().max().item<float>(), 1e-5);
  EXPECT_FALSE(m.Forward(left_ids, left_mask).isnan().any().item<bool>());

  // Without the mask the padding is attended to and the answer changes: the mask matters.
  at::Tensor unmasked = m.Forward(left_ids).slice(1, 3);
  EXPECT_GT((unmasked - alone).abs().max().item<float>(), 1e-4);
}

TEST(DecoderModel, TokenLogProbsAreLogSoftmaxOfThePreviousPosition) {
  at::NoGradGuard no_grad;
  DecoderModel m(TinyConfig(ModelFamily::kLlama));
  m.InitRandom(3, 0.05);
  at::Tensor ids = at::randint(0, 512, {2, 7}, at::kLong);
  at::Tensor mask = at::ones({2, 7}, at::kLong);
  mask[1][5] = 0;
  mask[1][6] = 0;
  at::Tensor lp = m.TokenLogProbs(ids, mask);
  at::Tensor logp = at::log_softmax(m.Forward(ids, mask), -1);
  for (int64_t b = 0; b < 2; ++b) {
    EXPECT_EQ(lp[b][0].item<float>(), 0.0f);
    for (int64_t t = 1; t < 7; ++t) {
      float expected = mask[b][t].item<int64_t>() ? logp[b][t - 1][ids[b][t]].item<float>() : 0.f;
      EXPECT_NEAR(lp[b][t].item<float>(), expected, 1e-5) << b << "," << t;
    }
  }
}

// TokenLogProbs projects only the T-1 predicting positions through lm_head; its values and
// its gradients must be those of the full-logits formulation, tied head or not.
TEST(DecoderModel, TokenLogProbsGradientsMatchFullLogitsFormulation) {
  for (ModelFamily family : {ModelFamily::kQwen2, ModelFamily::kQwen3}) {
    DecoderModel m(TinyConfig(family));
    m.InitRandom(7, 0.05);
    at::Tensor ids = at::randint(0, 512, {2, 9}, at::kLong);
    at::Tensor mask = at::ones({2, 9}, at::kLong);
    mask[0][0] = 0;  // left padding in row 0
    mask[1][8] = 0;  // right padding in row 1
    at::Tensor weights = at::rand({2, 8});  // a non-uniform upstream gradient

    at::Tensor lp = m.TokenLogProbs(ids, mask);
    (lp.slice(1, 1) * weights).sum().backward();
    std::vector<at::Tensor> grads;
    for (auto& p : m.parameters()) {
      grads.push_back(p.grad().clone());
      p.mutable_grad() = at::Tensor();
    }

    at::Tensor logp = at::log_softmax(m.Forward(ids, mask).slice(1, 0, 8), -1);
    at::Tensor ref = logp.gather(-1, ids.slice(1, 1).unsqueeze(-1)).squeeze(-1);
    at::Tensor m_long = mask.to(at::kLong);
    at::Tensor valid = m_long.slice(1, 1).gt(0).logical_and(m_long.cumsum(1).slice(1, 0, 8).gt(0));
    ref = ref * valid.to(at::kFloat);
    EXPECT_LE((lp.slice(1, 1) - ref).abs().max().item<float>(), 1e-5)
        << ModelFamilyName(family);
    (ref * weights).sum().backward();
    size_t i = 0;
    for (const auto& p : m.named_parameters(true)) {
      const at::Tensor& g = grads[i++];
      ASSERT_TRUE(p.value().grad().defined()) << p.key();
      EXPECT_LE((g - p.value().grad()).abs().max().item<float>(),
                1e-5 + 1e-4 * p.value().grad().abs().max().item<float>())
          << ModelFamilyName(family) << " " << p.key();
    }
  }
}

TEST(DecoderModel, ScoreCompletionsMatchesPerPairTeacherForcing) {
  at::NoGradGuard no_grad;
  DecoderModel m(TinyConfig(ModelFamily::kQwen3));
  m.InitRandom(4, 0.05);
  std::vector<std::vector<int32_t>> prompts = {{5, 6, 7}, {9}, {1, 2, 3, 4, 5}};
  std::vector<std::vector<int32_t>> completions = {{10, 11}, {12, 13, 14, 15}, {}};
  CompletionLogProbs scored = m.ScoreCompletions(prompts, completions);
  ASSERT_EQ(scored.log_probs.sizes(), (std::vector<int64_t>{3, 4}));
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<int64_t> all(prompts[i].begin(), prompts[i].end());
    all.insert(all.end(), completions[i].begin(), completions[i].end());
    at::Tensor ids = at::tensor(all, at::kLong).unsqueeze(0);
    at::Tensor lp = m.TokenLogProbs(ids);
    for (int64_t j = 0; j < 4; ++j) {
      if (j < static_cast<int64_t>(completions[i].size())) {
        EXPECT_EQ(scored.mask[i][j].item<float>(), 1.0f);
        EXPECT_NEAR(scored.log_probs[i][j].item<float>(),
                    lp[0][prompts[i].size() + j].item<float>(), 1e-5);
        EXPECT_LT(scored.log_probs[i][j].item<float>(), 0.0f);
      } else {
        EXPECT_EQ(scored.mask[i][j].item<float>(), 0.0f);
        EXPECT_EQ(scored.log_probs[i][j].item<float>(), 0.0f);
      }
    }
  }
}

TEST(DecoderModel, GradientsReachEveryParameter) {
  DecoderModel m(TinyConfig(ModelFamily::kQwen2));
  m.InitRandom(5);
  CompletionLogProbs scored = m.ScoreCompletions({{1, 2, 3}, {4, 5}}, {{6, 7}, {8, 9, 10}});
  at::Tensor loss = -(scored.log_probs * scored.mask).sum();
  loss.backward();
  for (const auto& p : m.named_parameters(true)) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<float>(), 0.0f) << p.key();
  }
}

TEST(DecoderModel, HalfPrecisionParametersStillProduceFloatLogits) {
  at::NoGradGuard no_grad;
  DecoderModel m(TinyConfig(ModelFamily::kQwen3));
  m.InitRandom(6, 0.05);
  at::Tensor ids = at::randint(0, 512, {2, 5}, at::kLong);
  at::Tensor ref = m.Forward(ids);
  m.to(at::kBFloat16);
  EXPECT_EQ(m.dtype(), at::kBFloat16);
  at::Tensor bf = m.Forward(ids);
  EXPECT_EQ(bf.scalar_type(), at::kFloat);
  // bf16 keeps ~3 significant digits; the logits must be close, not equal.
  EXPECT_LE((bf - ref).abs().max().item<float>(), 0.05f);
}

TEST(DecoderModel, RejectsInvalidConfig) {
  ModelConfig c = TinyConfig(ModelFamily::kLlama);
  c.num_key_value_heads = 3;  // 4 heads are not a multiple of 3
  EXPECT_THROW(DecoderModel m(c), c10::Error);
}

}  // namespace
}  // namespace egca::trainer
