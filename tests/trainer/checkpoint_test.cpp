#include "egca/trainer/policy/checkpoint.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/trainer/policy/safetensors.h"
#include "model_test_util.h"

namespace egca::trainer {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;
using testing::TinyConfig;

const LoadOptions kCpu{at::Device(at::kCPU)};

at::Tensor Logits(DecoderModel& m) {
  at::NoGradGuard no_grad;
  at::Tensor ids = at::arange(0, 40, at::kLong).remainder(512).mul(13).remainder(512).view({2, 20});
  return m.Forward(ids);
}

class RoundTrip : public ::testing::TestWithParam<ModelFamily> {};

TEST_P(RoundTrip, SavedAndLoadedModelGivesBitIdenticalLogits) {
  ScratchDir dir("ckpt_roundtrip");
  DecoderModel m(TinyConfig(GetParam()));
  m.InitRandom(11);
  ASSERT_TRUE(SaveCheckpoint(m, dir.path()).ok());
  EXPECT_TRUE(fs::exists(dir.file("config.json")));
  EXPECT_TRUE(fs::exists(dir.file("model.safetensors")));
  auto loaded = LoadCheckpoint(dir.path(), kCpu);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ((*loaded)->config().family, GetParam());
  EXPECT_TRUE(at::equal(Logits(m), Logits(**loaded)));
}

INSTANTIATE_TEST_SUITE_P(Families, RoundTrip,
                         ::testing::Values(ModelFamily::kLlama, ModelFamily::kQwen2,
                                           ModelFamily::kQwen3),
                         [](const auto& info) { return std::string(ModelFamilyName(info.param)); });

TEST(Checkpoint, ShardedSaveWritesTransformersLayoutAndLoadsBack) {
  ScratchDir dir("ckpt_sharded");
  DecoderModel m(TinyConfig(ModelFamily::kQwen3));
  m.InitRandom(12);
  // First a single-file save, then sharded into the same dir: the stale single file must go.
  ASSERT_TRUE(SaveCheckpoint(m, dir.path()).ok());
  ASSERT_TRUE(SaveCheckpoint(m, dir.path(), SaveOptions().set_max_shard_bytes(100000)).ok());
  EXPECT_FALSE(fs::exists(dir.file("model.safetensors")));
  auto index_text = ReadFile(dir.file("model.safetensors.index.json"));
  ASSERT_TRUE(index_text.ok());
  auto index = nlohmann::json::parse(*index_text);
  const auto& weight_map = index["weight_map"];
  EXPECT_EQ(weight_map.size(), m.named_parameters(true).size());
  std::set<std::string> shards;
  int64_t total = 0;
  for (auto it = weight_map.begin(); it != weight_map.end(); ++it) shards.insert(it.value());
  ASSERT_GT(shards.size(), 2u);
  const std::string first = *shards.begin();
  EXPECT_EQ(first, fmt::format("model-00001-of-{:05d}.safetensors", shards.size()));
  for (const auto& s : shards) {
    auto f = SafetensorsFile::Open(dir.file(s));
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ((*f)->metadata().at("format"), "pt");
    for (const auto& t : (*f)->tensors()) total += t.num_bytes;
  }
  EXPECT_EQ(index["metadata"]["total_size"].get<int64_t>(), total);

  auto loaded = LoadCheckpoint(dir.path(), kCpu);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_TRUE(at::equal(Logits(m), Logits(**loaded)));
}

class ReducedPrecision : public ::testing::TestWithParam<at::ScalarType> {};

TEST_P(ReducedPrecision, LoadsStoredHalfPrecisionWeights) {
  ScratchDir dir("ckpt_half");
  const at::ScalarType dtype = GetParam();
  ModelConfig c = TinyConfig(ModelFamily::kQwen2);
  DecoderModel m(c);
  m.InitRandom(13);
  ASSERT_TRUE(SaveCheckpoint(m, dir.path(), SaveOptions().set_dtype(dtype)).ok());
  auto config = LoadModelConfig(dir.file("config.json"));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->torch_dtype, TorchDtypeName(dtype));
  auto f = SafetensorsFile::Open(dir.file("model.safetensors"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->tensors()[0].dtype,
            dtype == at::kHalf ? SafetensorsDtype::kF16 : SafetensorsDtype::kBF16);

  // Loading into float32 must equal the original weights rounded to `dtype` exactly.
  {
    at::NoGradGuard no_grad;
    for (auto& p : m.named_parameters(true)) p.value().copy_(p.value().to(dtype).to(at::kFloat));
  }
  auto as_f32 = LoadCheckpoint(dir.path(), kCpu);
  ASSERT_TRUE(as_f32.ok()) << as_f32.status().ToString();
  EXPECT_TRUE(at::equal(Logits(m), Logits(**as_f32)));

  // And loading keeping the storage dtype works too (LibTorch 1.13 has no float16 matmul
  // on the CPU, so float16 compute is a GPU-only configuration).
  if (dtype == at::kHalf) return;
  auto kept = LoadCheckpoint(dir.path(), LoadOptions(at::kCPU).set_dtype(dtype));
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ((*kept)->dtype(), dtype);
  EXPECT_LE((Logits(**kept) - Logits(m)).abs().max().item<float>(), 0.05f);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ReducedPrecision, ::testing::Values(at::kHalf, at::kBFloat16),
                         [](const auto& info) {
                           return std::string(info.param == at::kHalf ? "f16" : "bf16");
                         });

// Rewrites model.safetensors of `dir` with `edit` applied to its tensor list.
template <typename Edit>
void RewriteWeights(const std::string& dir, Edit edit) {
  auto f = SafetensorsFile::Open(dir + "/model.safetensors");
  ASSERT_TRUE(f.ok());
  std::vector<SafetensorsTensorView> views;
  std::vector<std::string> keep_alive;
  keep_alive.reserve((*f)->tensors().size() + 1);
  for (const auto& t : (*f)->tensors()) {
    keep_alive.emplace_back(reinterpret_cast<const char*>(t.data), t.num_bytes);
    views.push_back({t.name, t.dtype, t.shape, keep_alive.back().data()});
  }
  edit(views, keep_alive);
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", views, {{"format", "pt"}}).ok());
}

Status LoadStatus(const std::string& dir) { return LoadCheckpoint(dir, kCpu).status(); }

TEST(Checkpoint, MismatchesGiveErrorsNamingFileAndTensor) {
  ScratchDir dir("ckpt_errors");
  const std::string weights = dir.file("model.safetensors");
  auto fresh = [&] {
    ASSERT_TRUE(CreateRandomCheckpoint(dir.path(), TinyConfig(ModelFamily::kQwen3), 1).ok());
  };

  fresh();
  RewriteWeights(dir.path(), [](auto& views, auto&) {
    views.erase(std::remove_if(views.begin(), views.end(),
                               [](const auto& v) {
                                 return v.name == "model.layers.1.self_attn.k_norm.weight";
                               }),
                views.end());
  });
  Status s = LoadStatus(dir.path());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find(weights), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("missing tensor \"model.layers.1.self_attn.k_norm.weight\""),
            std::string::npos)
      << s.message();

  fresh();
  float extra = 1.0f;
  RewriteWeights(dir.path(), [&](auto& views, auto&) {
    views.push_back({"model.layers.0.self_attn.q_proj.bias", SafetensorsDtype::kF32, {1}, &extra});
  });
  s = LoadStatus(dir.path());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unexpected tensor \"model.layers.0.self_attn.q_proj.bias\""),
            std::string::npos)
      << s.message();

  fresh();
  RewriteWeights(dir.path(), [](auto& views, auto&) {
    for (auto& v : views) {
      if (v.name == "model.norm.weight") v.shape = {16, 4};  // same bytes, wrong shape
    }
  });
  s = LoadStatus(dir.path());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor \"model.norm.weight\": shape [16, 4] but the config "
                             "expects [64]"),
            std::string::npos)
      << s.message();

  fresh();
  RewriteWeights(dir.path(), [](auto& views, auto&) {
    for (auto& v : views) {
      if (v.name == "model.norm.weight") v.dtype = SafetensorsDtype::kI32;  // same byte count
    }
  });
  s = LoadStatus(dir.path());
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("tensor \"model.norm.weight\": dtype I32 is not supported"),
            std::string::npos)
      << s.message();

  // Truncated file: cut the last kilobyte.
  fresh();
  fs::resize_file(weights, fs::file_size(weights) - 1024);
  s = LoadStatus(dir.path());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(weights), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();

  // Corrupt header JSON.
  fresh();
  {
    std::fstream f(weights, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    f.write("#", 1);
  }
  s = LoadStatus(dir.path());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("header is not a valid JSON object"), std::string::npos);

  fs::remove(weights);
  s = LoadStatus(dir.path());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("no model.safetensors or model.safetensors.index.json"),
            std::string::npos)
      << s.message();

  fs::remove(dir.file("config.json"));
  s = LoadStatus(dir.path());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("config.json"), std::string::npos) << s.message();
}

TEST(Checkpoint, ShardMissingFromIndexAndTensorMissingFromShardAreReported) {
  ScratchDir dir("ckpt_index_errors");
  DecoderModel m(TinyConfig(ModelFamily::kLlama));
  m.InitRandom(3);
  ASSERT_TRUE(SaveCheckpoint(m, dir.path(), SaveOptions().set_max_shard_bytes(100000)).ok());
  auto index = nlohmann::json::parse(*ReadFile(dir.file("model.safetensors.index.json")));
  const std::string moved_to = index["weight_map"]["model.norm.weight"];
  // Point a tensor at the wrong shard.
  index["weight_map"]["model.norm.weight"] =
      "model-00001-of-" + moved_to.substr(std::string("model-00001-of-").size());
  if (index["weight_map"]["model.norm.weight"] == moved_to) {
    index["weight_map"]["model.norm.weight"] = index["weight_map"]["lm_head.weight"];
  }
  ASSERT_TRUE(WriteFileAtomic(dir.file("model.safetensors.index.json"), index.dump()).ok());
  Status s = LoadStatus(dir.path());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("missing tensor \"model.norm.weight\""), std::string::npos)
      << s.message();

  index["weight_map"]["model.norm.weight"] = "model-00099-of-00099.safetensors";
  ASSERT_TRUE(WriteFileAtomic(dir.file("model.safetensors.index.json"), index.dump()).ok());
  s = LoadStatus(dir.path());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("model-00099-of-00099.safetensors"), std::string::npos);
}

TEST(Checkpoint, ToleratesInvFreqBuffersAndTiedLmHead) {
  ScratchDir dir("ckpt_tolerated");
  ModelConfig c = TinyConfig(ModelFamily::kQwen2);  // tied
  DecoderModel m(c);
  m.InitRandom(4);
  ASSERT_TRUE(SaveCheckpoint(m, dir.path()).ok());
  std::vector<float> inv_freq(8, 0.5f);
  RewriteWeights(dir.path(), [&](auto& views, auto& keep_alive) {
    views.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq",
                     SafetensorsDtype::kF32,
                     {8},
                     inv_freq.data()});
    // Some exporters write lm_head.weight even when tied; it must be a copy we can ignore.
    for (const auto& v : std::vector<SafetensorsTensorView>(views)) {
      if (v.name == "model.embed_tokens.weight") {
        views.push_back({"lm_head.weight", v.dtype, v.shape, v.data});
      }
    }
  });
  auto loaded = LoadCheckpoint(dir.path(), kCpu);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_TRUE(at::equal(Logits(m), Logits(**loaded)));
}

TEST(ModelConfig, ParsesRealQwenStyleConfigJson) {
  // Keys as Qwen2.5-Coder-0.5B and Qwen3-0.6B ship them.
  const std::string qwen25 = R"({
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896,
    "initializer_range": 0.02, "intermediate_size": 4864, "max_position_embeddings": 32768,
    "max_window_layers": 24, "model_type": "qwen2", "num_attention_heads": 14,
    "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
    "rope_scaling": null, "rope_theta": 1000000.0, "sliding_window": 32768,
    "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.45.2",
    "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";
  auto c = ParseModelConfig(qwen25, "qwen25/config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->family, ModelFamily::kQwen2);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_TRUE(c->qkv_bias());
  EXPECT_FALSE(c->o_proj_bias());
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->kv_group_size(), 7);
  EXPECT_EQ(c->torch_dtype, "bfloat16");

  const std::string qwen3 = R"({
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "bos_token_id": 151643,
    "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
    "intermediate_size": 3072, "max_position_embeddings": 40960, "model_type": "qwen3",
    "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
    "tie_word_embeddings": true, "torch_dtype": "bfloat16", "vocab_size": 151936})";
  c = ParseModelConfig(qwen3, "qwen3/config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->head_dim, 128);  // not hidden/heads = 64
  EXPECT_TRUE(c->qk_norm());
  EXPECT_FALSE(c->qkv_bias());
  EXPECT_EQ(c->rope_theta, 1000000.0);
  EXPECT_EQ(c->eos_token_id, 151645);

  // Round trip through our writer.
  auto again = ParseModelConfig(ModelConfigToJson(*c), "rt");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->head_dim, 128);
  EXPECT_EQ(again->num_key_value_heads, 8);

  auto bad = ParseModelConfig(R"({"model_type": "gpt2", "vocab_size": 5})", "g/config.json");
  EXPECT_EQ(bad.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(bad.status().message().find("g/config.json"), std::string::npos);
  bad = ParseModelConfig(R"({"model_type": "llama", "vocab_size": 5, "hidden_size": 8,
      "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
      "rope_scaling": {"rope_type": "llama3", "factor": 8.0}})",
                         "l/config.json");
  EXPECT_EQ(bad.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(bad.status().message().find("rope_scaling"), std::string::npos);
  bad = ParseModelConfig(R"({"model_type": "llama", "hidden_size": 8})", "m/config.json");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("missing \"vocab_size\""), std::string::npos);
  bad = ParseModelConfig("{not json", "x/config.json");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace egca::trainer
