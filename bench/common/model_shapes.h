// Model shapes the benchmarks build random checkpoints of: "qwen2.5-0.5b" (Qwen/Qwen2.5-0.5B's
// config.json), "small" and "tiny" (Qwen3-shaped, small vocabularies).
#pragma once

#include <string>

#include "egca/trainer/policy/model_config.h"

namespace egca::bench {

inline egca::trainer::ModelConfig ModelShape(const std::string& name) {
  using namespace egca::trainer;
  ModelConfig c;
  if (name == "qwen2.5-0.5b") {  // Qwen/Qwen2.5-0.5B's config.json
    c.family = ModelFamily::kQwen2;
    c.model_type = "qwen2";
    c.vocab_size = 151936;
    c.hidden_size = 896;
    c.intermediate_size = 4864;
    c.num_hidden_layers = 24;
    c.num_attention_heads = 14;
    c.num_key_value_heads = 2;
    c.head_dim = 64;
    c.rope_theta = 1000000.0;
    c.tie_word_embeddings = true;
    c.max_position_embeddings = 32768;
  } else {
    const bool small = name == "small";
    c.family = ModelFamily::kQwen3;
    c.model_type = "qwen3";
    c.vocab_size = small ? 32768 : 4096;
    c.hidden_size = small ? 256 : 64;
    c.intermediate_size = small ? 768 : 128;
    c.num_hidden_layers = small ? 4 : 2;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = c.hidden_size / 4;
    c.max_position_embeddings = 8192;
  }
  return c;
}

}  // namespace egca::bench
