#include "egca/trainer/policy/model_config.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/core/json_depth.h"

namespace egca::trainer {
namespace {

using nlohmann::json;

// Reads an optional integer field; a present field of the wrong type is an error.
Status ReadInt(const json& j, const char* key, const std::string& source, int64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_number_integer()) {
    return InvalidArgument(fmt::format("{}: \"{}\" must be an integer", source, key));
  }
  *out = it->get<int64_t>();
  return Status::Ok();
}

Status ReadDouble(const json& j, const char* key, const std::string& source, double* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_number()) {
    return InvalidArgument(fmt::format("{}: \"{}\" must be a number", source, key));
  }
  *out = it->get<double>();
  return Status::Ok();
}

Status ReadBool(const json& j, const char* key, const std::string& source, bool* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_boolean()) {
    return InvalidArgument(fmt::format("{}: \"{}\" must be true or false", source, key));
  }
  *out = it->get<bool>();
  return Status::Ok();
}

// eos_token_id is an int or a list of ints (Qwen2.5 instruct, Llama 3).
Status ReadFirstId(const json& j, const char* key, const std::string& source, int64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (it->is_number_integer()) {
    *out = it->get<int64_t>();
    return Status::Ok();
  }
  if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) {
    *out = (*it)[0].get<int64_t>();
    return Status::Ok();
  }
  return InvalidArgument(
      fmt::format("{}: \"{}\" must be an integer or a list of integers", source, key));
}

const char* ArchitectureName(ModelFamily family) {
  switch (family) {
    case ModelFamily::kLlama:
      return "LlamaForCausalLM";
    case ModelFamily::kQwen2:
      return "Qwen2ForCausalLM";
    case ModelFamily::kQwen3:
      return "Qwen3ForCausalLM";
  }
  return "LlamaForCausalLM";
}

}  // namespace

const char* ModelFamilyName(ModelFamily family) {
  switch (family) {
    case ModelFamily::kLlama:
      return "llama";
    case ModelFamily::kQwen2:
      return "qwen2";
    case ModelFamily::kQwen3:
      return "qwen3";
  }
  return "llama";
}

Status ModelConfig::Validate() const {
  auto positive = [](int64_t v) { return v > 0; };
  if (!positive(vocab_size) || !positive(hidden_size) || !positive(intermediate_size) ||
      !positive(num_hidden_layers) || !positive(num_attention_heads) ||
      !positive(num_key_value_heads) || !positive(head_dim)) {
    return InvalidArgument(
        "model config: vocab_size, hidden_size, intermediate_size, num_hidden_layers, "
        "num_attention_heads, num_key_value_heads and head_dim must all be positive");
  }
  if (num_attention_heads % num_key_value_heads != 0) {
    return InvalidArgument(fmt::format(
        "model config: num_attention_heads ({}) is not a multiple of num_key_value_heads ({})",
        num_attention_heads, num_key_value_heads));
  }
  if (head_dim % 2 != 0) {
    return InvalidArgument(
        fmt::format("model config: head_dim ({}) must be even for rotary "
                    "embeddings",
                    head_dim));
  }
  if (!(rms_norm_eps > 0) || !(rope_theta > 0)) {
    return InvalidArgument("model config: rms_norm_eps and rope_theta must be positive");
  }
  if (torch_dtype != "float32" && torch_dtype != "float16" && torch_dtype != "bfloat16" &&
      torch_dtype != "float64") {
    return Unimplemented(fmt::format(
        "model config: torch_dtype \"{}\" is not supported (float32, float16, bfloat16, float64)",
        torch_dtype));
  }
  return Status::Ok();
}

StatusOr<ModelConfig> ParseModelConfig(const std::string& json_text, const std::string& source) {
  EGCA_RETURN_IF_ERROR(CheckJsonDepth(json_text, source));
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(fmt::format("{}: malformed JSON", source));
  if (!j.is_object()) return InvalidArgument(fmt::format("{}: expected a JSON object", source));

  ModelConfig c;
  auto type_it = j.find("model_type");
  if (type_it == j.end() || !type_it->is_string()) {
    return InvalidArgument(fmt::format("{}: missing string \"model_type\"", source));
  }
  c.model_type = type_it->get<std::string>();
  if (c.model_type == "llama" || c.model_type == "mistral") {
    c.family = ModelFamily::kLlama;
  } else if (c.model_type == "qwen2") {
    c.family = ModelFamily::kQwen2;
  } else if (c.model_type == "qwen3") {
    c.family = ModelFamily::kQwen3;
  } else {
    return Unimplemented(
        fmt::format("{}: model_type \"{}\" is not supported (llama, mistral, qwen2, qwen3)", source,
                    c.model_type));
  }
  // Defaults that differ from the struct's: transformers' own per-family defaults.
  c.attention_bias = false;
  c.tie_word_embeddings = false;
  for (const char* required : {"vocab_size", "hidden_size", "intermediate_size",
                               "num_hidden_layers", "num_attention_heads"}) {
    if (!j.contains(required)) {
      return InvalidArgument(fmt::format("{}: missing \"{}\"", source, required));
    }
  }
  EGCA_RETURN_IF_ERROR(ReadInt(j, "vocab_size", source, &c.vocab_size));
  EGCA_RETURN_IF_ERROR(ReadInt(j, "hidden_size", source, &c.hidden_size));
  EGCA_RETURN_IF_ERROR(ReadInt(j, "intermediate_size", source, &c.intermediate_size));
  EGCA_RETURN_IF_ERROR(ReadInt(j, "num_hidden_layers", source, &c.num_hidden_layers));
  EGCA_RETURN_IF_ERROR(ReadInt(j, "num_attention_heads", source, &c.num_attention_heads));
  c.num_key_value_heads = c.num_attention_heads;
  EGCA_RETURN_IF_ERROR(ReadInt(j, "num_key_value_heads", source, &c.num_key_value_heads));
  c.head_dim = c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0;
  EGCA_RETURN_IF_ERROR(ReadInt(j, "head_dim", source, &c.head_dim));
  EGCA_RETURN_IF_ERROR(ReadDouble(j, "rms_norm_eps", source, &c.rms_norm_eps));
  EGCA_RETURN_IF_ERROR(ReadDouble(j, "rope_theta", source, &c.rope_theta));
  EGCA_RETURN_IF_ERROR(ReadBool(j, "tie_word_embeddings", source, &c.tie_word_embeddings));
  EGCA_RETURN_IF_ERROR(ReadBool(j, "attention_bias", source, &c.attention_bias));
  EGCA_RETURN_IF_ERROR(ReadInt(j, "max_position_embeddings", source, &c.max_position_embeddings));
  EGCA_RETURN_IF_ERROR(ReadFirstId(j, "bos_token_id", source, &c.bos_token_id));
  EGCA_RETURN_IF_ERROR(ReadFirstId(j, "eos_token_id", source, &c.eos_token_id));
  if (auto it = j.find("torch_dtype"); it != j.end() && it->is_string()) {
    c.torch_dtype = it->get<std::string>();
  }

  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null()) {
    return Unimplemented(fmt::format("{}: \"rope_scaling\" is not supported", source));
  }
  if (auto it = j.find("use_sliding_window");
      it != j.end() && it->is_boolean() && it->get<bool>()) {
    return Unimplemented(fmt::format("{}: \"use_sliding_window\": true is not supported", source));
  }
  if (auto it = j.find("mlp_bias"); it != j.end() && it->is_boolean() && it->get<bool>()) {
    return Unimplemented(fmt::format("{}: \"mlp_bias\": true is not supported", source));
  }
  if (auto it = j.find("hidden_act");
      it != j.end() && it->is_string() && it->get<std::string>() != "silu") {
    return Unimplemented(fmt::format("{}: hidden_act \"{}\" is not supported (silu)", source,
                                     it->get<std::string>()));
  }
  Status valid = c.Validate();
  if (!valid.ok()) return valid.WithContext(source);
  return c;
}

StatusOr<ModelConfig> LoadModelConfig(const std::string& path) {
  EGCA_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseModelConfig(text, path);
}

std::string ModelConfigToJson(const ModelConfig& c) {
  json j = json::object();
  j["architectures"] = json::array({ArchitectureName(c.family)});
  j["model_type"] = c.model_type;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["hidden_act"] = "silu";
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = nullptr;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["attention_bias"] = c.attention_bias;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["torch_dtype"] = c.torch_dtype;
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  if (c.eos_token_id >= 0) j["eos_token_id"] = c.eos_token_id;
  if (c.family == ModelFamily::kQwen2) j["use_sliding_window"] = false;
  return j.dump(2) + "\n";
}

}  // namespace egca::trainer
