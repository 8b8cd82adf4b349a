// ModelConfig: the architecture of a decoder-only transformer (Llama, Qwen2/Qwen2.5,
// Qwen3), read from and written to Hugging Face `config.json`. Torch-free on purpose so
// that tools can inspect a checkpoint without compiling against LibTorch.
#pragma once

#include <cstdint>
#include <string>

#include "egca/core/status.h"

namespace egca::trainer {

// Which parameter layout the checkpoint uses. The families differ only in which optional
// tensors exist; the forward math is shared.
enum class ModelFamily {
  kLlama,  // model_type "llama" (also "mistral"): no biases, no q/k norm
  kQwen2,  // model_type "qwen2": q/k/v projections carry biases (attention_bias implied)
  kQwen3,  // model_type "qwen3": per-head RMSNorm on q and k (q_norm, k_norm), explicit head_dim
};

const char* ModelFamilyName(ModelFamily family);  // "llama", "qwen2", "qwen3"

struct ModelConfig {
  ModelFamily family = ModelFamily::kQwen2;
  std::string model_type = "qwen2";  // as written in config.json
  int64_t vocab_size = 512;
  int64_t hidden_size = 64;
  int64_t intermediate_size = 128;
  int64_t num_hidden_layers = 2;
  int64_t num_attention_heads = 4;
  int64_t num_key_value_heads = 2;  // grouped-query attention: heads share kv heads
  int64_t head_dim = 16;            // hidden_size / num_attention_heads unless given (Qwen3)
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;  // lm_head shares model.embed_tokens.weight
  bool attention_bias = false;       // q/k/v (and, for Llama, o) projection biases
  int64_t max_position_embeddings = 2048;
  std::string torch_dtype = "float32";  // storage dtype: "float32", "float16", "bfloat16"
  int64_t bos_token_id = -1;            // -1 when absent
  int64_t eos_token_id = -1;            // first id when config.json holds a list

  // Number of query heads per kv head.
  int64_t kv_group_size() const { return num_attention_heads / num_key_value_heads; }
  // Whether o_proj has a bias (Llama's attention_bias covers o_proj; Qwen2 never has one).
  bool o_proj_bias() const { return attention_bias && family == ModelFamily::kLlama; }
  // Whether q/k/v projections have biases.
  bool qkv_bias() const { return attention_bias || family == ModelFamily::kQwen2; }
  bool qk_norm() const { return family == ModelFamily::kQwen3; }

  // Checks internal consistency (positive sizes, heads divisible, supported dtype).
  Status Validate() const;
};

// Parses the text of a Hugging Face config.json. `source` names the file in errors.
// Unknown keys are ignored; unsupported features (rope_scaling, sliding window in use,
// mlp_bias, unknown model_type) are an UNIMPLEMENTED error naming the key.
StatusOr<ModelConfig> ParseModelConfig(const std::string& json_text, const std::string& source);

// Reads and parses `path` (a config.json).
StatusOr<ModelConfig> LoadModelConfig(const std::string& path);

// Serializes to config.json text (2-space indented, keys as Hugging Face writes them, with
// "architectures" set so transformers' AutoModelForCausalLM picks the right class).
std::string ModelConfigToJson(const ModelConfig& config);

}  // namespace egca::trainer
