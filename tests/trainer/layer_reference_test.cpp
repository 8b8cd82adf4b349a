// Checks the layer math against tests/trainer/reference/layer_reference.py, an independent
// float64 implementation written from the published formulas (RMSNorm, RoPE with
// rotate_half, GQA, SwiGLU, Qwen2 biases, Qwen3 q/k norm, tied embeddings). The weights come
// from the same closed-form formula on both sides; the expected numbers are checked in.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/trainer/policy/model.h"
#include "model_layers.h"

namespace egca::trainer {
namespace {

using nlohmann::json;

const json& Baseline() {
  static const json* baseline = [] {
    auto text = ReadFile(std::string(EGCA_SOURCE_DIR) +
                         "/tests/trainer/reference/layer_reference_baseline.json");
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    return new json(json::parse(text.ok() ? *text : "{}"));
  }();
  return *baseline;
}

// offset + scale * sin(0.37 * i + phase) over the flat row-major index, in double, then
// rounded to float32 (the C++ model's dtype).
at::Tensor Formula(const std::vector<int64_t>& shape, double phase, double scale, double offset) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  at::Tensor t = at::empty({n}, at::kDouble);
  auto a = t.accessor<double, 1>();
  for (int64_t i = 0; i < n; ++i) a[i] = offset + scale * std::sin(0.37 * i + phase);
  return t.view(shape).to(at::kFloat);
}

// [shape, phase, scale, offset] as the script writes it.
at::Tensor FormulaFromSpec(const json& spec) {
  return Formula(spec[0].get<std::vector<int64_t>>(), spec[1], spec[2], spec[3]);
}

at::Tensor Expected(const json& values) {
  return at::tensor(values.get<std::vector<double>>(), at::kDouble).to(at::kFloat);
}

TEST(LayerReference, RmsNorm) {
  const json& r = Baseline()["rms_norm"];
  at::Tensor y = layers::RmsNorm(FormulaFromSpec(r["x"]), FormulaFromSpec(r["weight"]),
                                 r["eps"].get<double>());
  at::Tensor expected = Expected(r["expected"]).view(y.sizes());
  EXPECT_TRUE(at::allclose(y, expected, 1e-5, 1e-6)) << (y - expected).abs().max();
}

TEST(LayerReference, RotaryEmbeddingAtExplicitPositions) {
  const json& r = Baseline()["rope"];
  at::Tensor x = FormulaFromSpec(r["x"]).unsqueeze(0);  // [1, H, T, D]
  at::Tensor positions =
      at::tensor(r["positions"].get<std::vector<int64_t>>(), at::kLong).unsqueeze(0);
  auto [cos, sin] = layers::RotaryCosSin(positions, x.size(-1), r["theta"].get<double>());
  at::Tensor y = layers::ApplyRotary(x, cos, sin).squeeze(0);
  at::Tensor expected = Expected(r["expected"]).view(y.sizes());
  EXPECT_TRUE(at::allclose(y, expected, 1e-5, 1e-5)) << (y - expected).abs().max();
  // Position 0 is the identity rotation.
  EXPECT_TRUE(at::allclose(y.select(1, 0), x.squeeze(0).select(1, 0)));
}

TEST(LayerReference, GroupedQueryHeadsShareTheirKvHead) {
  at::Tensor kv = at::arange(2 * 3, at::kFloat).view({1, 2, 3, 1});  // 2 kv heads
  at::Tensor rep = layers::RepeatKv(kv, 3);                          // 6 query heads
  for (int64_t h = 0; h < 6; ++h) {
    EXPECT_TRUE(at::equal(rep.select(1, h), kv.select(1, h / 3))) << h;
  }
}

class ModelReference : public ::testing::TestWithParam<int> {};

TEST_P(ModelReference, LeftPaddedBatchMatchesUnpaddedReference) {
  const json& m = Baseline()["models"][GetParam()];
  auto config = ParseModelConfig(m["config"].dump(), "baseline config");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  DecoderModel model(*config);
  auto params = model.named_parameters(true);
  ASSERT_EQ(params.size(), m["params"].size()) << "parameter sets differ from the reference";
  {
    at::NoGradGuard no_grad;
    for (const json& p : m["params"]) {
      const std::string name = p["name"];
      ASSERT_TRUE(params.contains(name)) << name;
      at::Tensor value =
          Formula(p["shape"].get<std::vector<int64_t>>(), p["phase"], p["scale"], p["offset"]);
      ASSERT_EQ(params[name].sizes(), value.sizes()) << name;
      params[name].copy_(value);
    }
  }
  // Left-pad the sequences into one batch, as the sampler does.
  const auto seqs = m["sequences"].get<std::vector<std::vector<int64_t>>>();
  int64_t max_len = 0;
  for (const auto& s : seqs) max_len = std::max<int64_t>(max_len, s.size());
  const int64_t b = static_cast<int64_t>(seqs.size());
  at::Tensor ids = at::zeros({b, max_len}, at::kLong);
  at::Tensor mask = at::zeros({b, max_len}, at::kLong);
  for (int64_t i = 0; i < b; ++i) {
    const int64_t off = max_len - static_cast<int64_t>(seqs[i].size());
    for (size_t j = 0; j < seqs[i].size(); ++j) {
      ids[i][off + j] = seqs[i][j];
      mask[i][off + j] = 1;
    }
  }
  at::NoGradGuard no_grad;
  at::Tensor logits = model.Forward(ids, mask);
  at::Tensor lp = model.TokenLogProbs(ids, mask);
  const int64_t vocab = config->vocab_size;
  for (int64_t i = 0; i < b; ++i) {
    const int64_t len = static_cast<int64_t>(seqs[i].size()), off = max_len - len;
    at::Tensor got = logits[i].slice(0, off);
    at::Tensor expected = Expected(m["logits"][i]).view({len, vocab});
    EXPECT_TRUE(at::allclose(got, expected, 1e-4, 1e-4))
        << "row " << i << " max diff " << (got - expected).abs().max().item<float>();
    at::Tensor got_lp = lp[i].slice(0, off);
    at::Tensor expected_lp = Expected(m["token_log_probs"][i]);
    EXPECT_TRUE(at::allclose(got_lp, expected_lp, 1e-4, 1e-4))
        << "row " << i << " max diff " << (got_lp - expected_lp).abs().max().item<float>();
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, ModelReference, ::testing::Values(0, 1, 2), [](const auto& info) {
  return std::string(info.param == 0   ? "qwen2_bias_tied_gqa"
                     : info.param == 1 ? "qwen3_qk_norm_head_dim12"
                                       : "llama_mqa_theta5e5");
});

}  // namespace
}  // namespace egca::trainer
