#include "egca/trainer/policy/checkpoint.h"

#include <ATen/ATen.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/core/json_depth.h"
#include "egca/trainer/policy/safetensors.h"

namespace egca::trainer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kSingleFile[] = "model.safetensors";
constexpr char kIndexFile[] = "model.safetensors.index.json";

std::string ShapeString(at::IntArrayRef shape) {
  return fmt::format("[{}]", fmt::join(shape.begin(), shape.end(), ", "));
}

std::optional<at::ScalarType> ToScalarType(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::kF32:
      return at::kFloat;
    case SafetensorsDtype::kF16:
      return at::kHalf;
    case SafetensorsDtype::kBF16:
      return at::kBFloat16;
    case SafetensorsDtype::kF64:
      return at::kDouble;
    default:
      return std::nullopt;
  }
}

std::optional<SafetensorsDtype> ToSafetensorsDtype(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat:
      return SafetensorsDtype::kF32;
    case at::kHalf:
      return SafetensorsDtype::kF16;
    case at::kBFloat16:
      return SafetensorsDtype::kBF16;
    case at::kDouble:
      return SafetensorsDtype::kF64;
    default:
      return std::nullopt;
  }
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The open weight files of a checkpoint directory and where each tensor lives.
struct WeightFiles {
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::map<std::string, const SafetensorsTensor*> tensors;
  std::map<std::string, const SafetensorsFile*> owner;
};

StatusOr<WeightFiles> OpenWeightFiles(const std::string& dir) {
  WeightFiles w;
  const fs::path root(dir);
  const fs::path index_path = root / kIndexFile;
  const fs::path single_path = root / kSingleFile;
  std::error_code ec;
  // transformers prefers the single file when both exist; so do we.
  if (fs::exists(single_path, ec)) {
    EGCA_ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(single_path.string()));
    for (const auto& t : file->tensors()) {
      w.tensors[t.name] = &t;
      w.owner[t.name] = file.get();
    }
    w.files.push_back(std::move(file));
    return w;
  }
  if (!fs::exists(index_path, ec)) {
    return NotFound(fmt::format("{}: no {} or {}", dir, kSingleFile, kIndexFile));
  }
  EGCA_ASSIGN_OR_RETURN(std::string text, ReadFile(index_path.string()));
  EGCA_RETURN_IF_ERROR(CheckJsonDepth(text, index_path.string()));
  json index = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object() || !index.contains("weight_map") ||
      !index["weight_map"].is_object()) {
    return InvalidArgument(
        fmt::format("{}: not a JSON object with a \"weight_map\" object", index_path.string()));
  }
  std::map<std::string, SafetensorsFile*> by_shard;
  for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
    if (!it.value().is_string()) {
      return InvalidArgument(
          fmt::format("{}: weight_map[\"{}\"] must be a file name", index_path.string(), it.key()));
    }
    const std::string shard = it.value().get<std::string>();
    if (shard.find('/') != std::string::npos) {
      return InvalidArgument(
          fmt::format("{}: weight_map[\"{}\"] = \"{}\" must be a file in "
                      "the checkpoint directory",
                      index_path.string(), it.key(), shard));
    }
    auto found = by_shard.find(shard);
    if (found == by_shard.end()) {
      EGCA_ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open((root / shard).string()));
      found = by_shard.emplace(shard, file.get()).first;
      w.files.push_back(std::move(file));
    }
    const SafetensorsTensor* t = found->second->Find(it.key());
    if (t == nullptr) {
      return NotFound(fmt::format("{}: missing tensor \"{}\" (listed for this shard in {})",
                                  found->second->path(), it.key(), kIndexFile));
    }
    w.tensors[it.key()] = t;
    w.owner[it.key()] = found->second;
  }
  // A tensor present in a shard but absent from the index would be silently dropped by
  // transformers; flag it instead.
  for (const auto& file : w.files) {
    for (const auto& t : file->tensors()) {
      if (!w.tensors.count(t.name)) {
        return InvalidArgument(fmt::format("{}: unexpected tensor \"{}\" (not in {})", file->path(),
                                           t.name, kIndexFile));
      }
    }
  }
  return w;
}

Status CopyInto(const SafetensorsTensor& src, const std::string& path, at::Tensor& dst) {
  auto scalar = ToScalarType(src.dtype);
  if (!scalar) {
    return Unimplemented(
        fmt::format("{}: tensor \"{}\": dtype {} is not supported for model "
                    "weights (F32, F16, BF16)",
                    path, src.name, SafetensorsDtypeName(src.dtype)));
  }
  if (!dst.sizes().equals(src.shape)) {
    return InvalidArgument(fmt::format("{}: tensor \"{}\": shape {} but the config expects {}",
                                       path, src.name, ShapeString(src.shape),
                                       ShapeString(dst.sizes())));
  }
  // memcpy into an owned, aligned CPU tensor: the mapped bytes may be unaligned.
  at::Tensor staged = at::empty(src.shape, at::TensorOptions().dtype(*scalar));
  if (src.num_bytes > 0) std::memcpy(staged.data_ptr(), src.data, src.num_bytes);
  dst.copy_(staged.to(dst.device(), dst.scalar_type()));
  return Status::Ok();
}

}  // namespace

std::optional<at::ScalarType> ParseTorchDtype(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "float16") return at::kHalf;
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float64") return at::kDouble;
  return std::nullopt;
}

const char* TorchDtypeName(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat:
      return "float32";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    case at::kDouble:
      return "float64";
    default:
      return "unsupported";
  }
}

Status LoadWeights(DecoderModel& model, const std::string& dir) {
  EGCA_ASSIGN_OR_RETURN(WeightFiles w, OpenWeightFiles(dir));
  at::NoGradGuard no_grad;
  auto params = model.named_parameters(/*recurse=*/true);
  std::set<std::string> expected;
  for (auto& item : params) {
    const std::string& name = item.key();
    expected.insert(name);
    auto it = w.tensors.find(name);
    if (it == w.tensors.end()) {
      return NotFound(fmt::format("{}: missing tensor \"{}\" (shape {})",
                                  w.files.size() == 1 ? w.files[0]->path() : dir, name,
                                  ShapeString(item.value().sizes())));
    }
    EGCA_RETURN_IF_ERROR(CopyInto(*it->second, w.owner[name]->path(), item.value()));
  }
  for (const auto& [name, tensor] : w.tensors) {
    if (expected.count(name)) continue;
    if (EndsWith(name, ".rotary_emb.inv_freq")) continue;
    if (name == "lm_head.weight" && model.config().tie_word_embeddings &&
        model.lm_head_weight().sizes().equals(tensor->shape)) {
      continue;
    }
    return InvalidArgument(
        fmt::format("{}: unexpected tensor \"{}\" for a {} model with this "
                    "config",
                    w.owner[name]->path(), name, ModelFamilyName(model.config().family)));
  }
  return Status::Ok();
}

StatusOr<std::shared_ptr<DecoderModel>> LoadCheckpoint(const std::string& dir,
                                                       const LoadOptions& options) {
  EGCA_ASSIGN_OR_RETURN(ModelConfig config,
                        LoadModelConfig((fs::path(dir) / "config.json").string()));
  if (!ToSafetensorsDtype(options.dtype)) {
    return InvalidArgument(
        fmt::format("LoadOptions.dtype {} is not a floating type egca "
                    "supports (float32, float16, bfloat16, float64)",
                    c10::toString(options.dtype)));
  }
  auto model = std::make_shared<DecoderModel>(config);
  model->to(options.device, options.dtype);
  EGCA_RETURN_IF_ERROR(LoadWeights(*model, dir));
  return model;
}

Status SaveCheckpoint(DecoderModel& model, const std::string& dir, const SaveOptions& options) {
  ModelConfig config = model.config();
  at::ScalarType dtype =
      options.dtype ? *options.dtype : ParseTorchDtype(config.torch_dtype).value_or(at::kFloat);
  auto st_dtype = ToSafetensorsDtype(dtype);
  if (!st_dtype) {
    return InvalidArgument(
        fmt::format("SaveOptions.dtype {} is not supported (float32, "
                    "float16, bfloat16, float64)",
                    c10::toString(dtype)));
  }
  config.torch_dtype = TorchDtypeName(dtype);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal(fmt::format("{}: cannot create directory: {}", dir, ec.message()));

  // Host copies in the storage dtype; kept alive until the files are written.
  struct Item {
    std::string name;
    at::Tensor host;
  };
  std::vector<Item> items;
  {
    at::NoGradGuard no_grad;
    for (auto& p : model.named_parameters(/*recurse=*/true)) {
      items.push_back({p.key(), p.value().detach().to(at::kCPU, dtype).contiguous()});
    }
  }
  auto view = [&](const Item& item) {
    return SafetensorsTensorView{item.name, *st_dtype, item.host.sizes().vec(),
                                 item.host.data_ptr()};
  };
  const std::map<std::string, std::string> metadata = {{"format", "pt"}};
  const fs::path root(dir);

  // Group into shards in parameter order (embedding first, lm_head last), as transformers
  // does, so a layer's tensors stay together.
  std::vector<std::vector<const Item*>> shards(1);
  int64_t shard_bytes = 0, total_bytes = 0;
  for (const Item& item : items) {
    const int64_t n = item.host.numel() * static_cast<int64_t>(item.host.element_size());
    if (options.max_shard_bytes > 0 && !shards.back().empty() &&
        shard_bytes + n > options.max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(&item);
    shard_bytes += n;
    total_bytes += n;
  }

  if (shards.size() == 1) {
    std::vector<SafetensorsTensorView> views;
    for (const Item* item : shards[0]) views.push_back(view(*item));
    EGCA_RETURN_IF_ERROR(WriteSafetensors((root / kSingleFile).string(), views, metadata));
    fs::remove(root / kIndexFile, ec);
  } else {
    json weight_map = json::object();
    for (size_t s = 0; s < shards.size(); ++s) {
      const std::string name =
          fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards.size());
      std::vector<SafetensorsTensorView> views;
      for (const Item* item : shards[s]) {
        views.push_back(view(*item));
        weight_map[item->name] = name;
      }
      EGCA_RETURN_IF_ERROR(WriteSafetensors((root / name).string(), views, metadata));
    }
    json index = {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
    EGCA_RETURN_IF_ERROR(WriteFileAtomic((root / kIndexFile).string(), index.dump(2) + "\n"));
    fs::remove(root / kSingleFile, ec);
  }
  return WriteFileAtomic((root / "config.json").string(), ModelConfigToJson(config));
}

Status CreateRandomCheckpoint(const std::string& dir, const ModelConfig& config, uint64_t seed,
                              const SaveOptions& options) {
  EGCA_RETURN_IF_ERROR(config.Validate());
  DecoderModel model(config);
  model.InitRandom(seed);
  return SaveCheckpoint(model, dir, options);
}

}  // namespace egca::trainer
