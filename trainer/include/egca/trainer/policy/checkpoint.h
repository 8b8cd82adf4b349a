// Hugging Face checkpoint directories: config.json plus either model.safetensors or
// model-0000i-of-0000N.safetensors shards with model.safetensors.index.json. What SaveCheckpoint
// writes, transformers' `AutoModelForCausalLM.from_pretrained(dir)` loads, and vice versa.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "egca/core/status.h"
#include "egca/trainer/policy/model.h"
#include "egca/trainer/policy/model_config.h"

namespace egca::trainer {

struct LoadOptions {
  // Where the parameters go. Required: there is no CPU default, so GPU callers cannot
  // forget it and silently run on the CPU.
  at::Device device;
  // Parameter dtype in memory; stored f16/bf16/f32/f64 tensors are converted. float32 is
  // the right choice on the CPU; bf16 on a GPU halves memory; float64 serves tests that
  // bound rounding (tests/trainer/dist_e2e_slow_test.cpp).
  at::ScalarType dtype = at::kFloat;

  explicit LoadOptions(at::Device d) : device(d) {}
  LoadOptions& set_dtype(at::ScalarType d) {
    dtype = d;
    return *this;
  }
};

// Reads `dir`/config.json, builds the model and loads every parameter. Errors name the
// file and tensor: NOT_FOUND for a missing config/weights file or a missing tensor,
// INVALID_ARGUMENT for an unexpected tensor, a shape mismatch, a malformed header or
// index, UNIMPLEMENTED for an unsupported dtype or architecture feature, DATA_LOSS for a
// truncated file. Tolerated extras: "*.rotary_emb.inv_freq" buffers written by old
// transformers versions, and "lm_head.weight" in a tied checkpoint when it equals the
// embedding's shape (it is ignored; the embedding is used).
StatusOr<std::shared_ptr<DecoderModel>> LoadCheckpoint(const std::string& dir,
                                                       const LoadOptions& options);

// Loads the weights of `dir` into an existing model (same contract as LoadCheckpoint; the
// model keeps its device and dtype). config.json is not consulted.
Status LoadWeights(DecoderModel& model, const std::string& dir);

struct SaveOptions {
  // Storage dtype; unset = the config's torch_dtype. config.json records what was written.
  std::optional<at::ScalarType> dtype;
  // 0 = one model.safetensors; otherwise shards of at most this many bytes (a tensor larger
  // than the limit gets a shard of its own), named as transformers names them, with
  // model.safetensors.index.json.
  int64_t max_shard_bytes = 0;

  SaveOptions& set_dtype(at::ScalarType d) {
    dtype = d;
    return *this;
  }
  SaveOptions& set_max_shard_bytes(int64_t n) {
    max_shard_bytes = n;
    return *this;
  }
};

// Writes config.json and the weights into `dir` (created if needed). Weight files of the
// other layout left by an earlier save are removed, since transformers would prefer a
// stale model.safetensors over a fresh index. Each file is written atomically.
Status SaveCheckpoint(DecoderModel& model, const std::string& dir,
                      const SaveOptions& options = SaveOptions());

// Creates a model from `config` with InitRandom(seed) and saves it to `dir` in the config's
// torch_dtype: the tiny checkpoints tests, examples and benchmarks run on.
Status CreateRandomCheckpoint(const std::string& dir, const ModelConfig& config, uint64_t seed,
                              const SaveOptions& options = SaveOptions());

// "float32" -> kFloat, "float16" -> kHalf, "bfloat16" -> kBFloat16; nullopt otherwise.
std::optional<at::ScalarType> ParseTorchDtype(const std::string& name);
const char* TorchDtypeName(at::ScalarType dtype);

}  // namespace egca::trainer
