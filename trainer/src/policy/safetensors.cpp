#include "egca/trainer/policy/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "egca/core/json_depth.h"

namespace egca::trainer {
namespace {

using nlohmann::json;

// The format caps the header at 100 MB; anything larger is corrupt, not a huge model.
constexpr uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;

struct DtypeEntry {
  const char* name;
  SafetensorsDtype dtype;
  size_t size;
};
constexpr DtypeEntry kDtypes[] = {
    {"F32", SafetensorsDtype::kF32, 4},   {"F16", SafetensorsDtype::kF16, 2},
    {"BF16", SafetensorsDtype::kBF16, 2}, {"F64", SafetensorsDtype::kF64, 8},
    {"I64", SafetensorsDtype::kI64, 8},   {"I32", SafetensorsDtype::kI32, 4},
    {"I16", SafetensorsDtype::kI16, 2},   {"I8", SafetensorsDtype::kI8, 1},
    {"U8", SafetensorsDtype::kU8, 1},     {"BOOL", SafetensorsDtype::kBool, 1},
};

bool ParseDtype(const std::string& name, SafetensorsDtype* out) {
  for (const auto& e : kDtypes) {
    if (name == e.name) {
      *out = e.dtype;
      return true;
    }
  }
  return false;
}

// Closes a file descriptor on scope exit.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

// Closes a FILE* on scope exit unless released.
class FileCloser {
 public:
  explicit FileCloser(FILE* f) : f_(f) {}
  ~FileCloser() {
    if (f_) std::fclose(f_);
  }
  FileCloser(const FileCloser&) = delete;
  FileCloser& operator=(const FileCloser&) = delete;
  // Closes now and reports whether buffered writes reached the file.
  bool Close() {
    bool ok = std::fclose(f_) == 0;
    f_ = nullptr;
    return ok;
  }

 private:
  FILE* f_;
};

}  // namespace

const char* SafetensorsDtypeName(SafetensorsDtype dtype) {
  for (const auto& e : kDtypes) {
    if (e.dtype == dtype) return e.name;
  }
  return "?";
}

size_t SafetensorsDtypeSize(SafetensorsDtype dtype) {
  for (const auto& e : kDtypes) {
    if (e.dtype == dtype) return e.size;
  }
  return 0;
}

int64_t SafetensorsTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(fmt::format("{}: no such file", path));
    return Internal(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  FdCloser closer(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return Internal(fmt::format("{}: cannot stat: {}", path, std::strerror(errno)));
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8) {
    return DataLoss(
        fmt::format("{}: truncated safetensors file ({} bytes, need at least 8 "
                    "for the header length)",
                    path, file_size));
  }

  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  file->map_size_ = file_size;
  file->map_ = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (file->map_ == MAP_FAILED) {
    file->map_ = nullptr;
    return Internal(fmt::format("{}: mmap failed: {}", path, std::strerror(errno)));
  }
  const auto* bytes = static_cast<const std::byte*>(file->map_);

  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes, 8);  // little-endian host
  if (header_len > kMaxHeaderBytes) {
    return DataLoss(
        fmt::format("{}: header length {} is not plausible (corrupt file?)", path, header_len));
  }
  if (8 + header_len > file_size) {
    return DataLoss(
        fmt::format("{}: truncated: header claims {} bytes but the file has only "
                    "{} after the length field",
                    path, header_len, file_size - 8));
  }
  std::string_view header_text(reinterpret_cast<const char*>(bytes + 8), header_len);
  EGCA_RETURN_IF_ERROR(CheckJsonDepth(header_text, path + ": header"));
  json header = json::parse(header_text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return InvalidArgument(fmt::format("{}: header is not a valid JSON object", path));
  }

  const std::byte* data = bytes + 8 + header_len;
  const uint64_t data_size = file_size - 8 - header_len;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const json& entry = it.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) {
        return InvalidArgument(fmt::format("{}: \"__metadata__\" must be an object", path));
      }
      for (auto m = entry.begin(); m != entry.end(); ++m) {
        if (!m.value().is_string()) {
          return InvalidArgument(
              fmt::format("{}: __metadata__ value \"{}\" must be a string", path, m.key()));
        }
        file->metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& what) {
      return InvalidArgument(fmt::format("{}: tensor \"{}\": {}", path, name, what));
    };
    if (!entry.is_object()) return bad("header entry must be an object");
    auto dt = entry.find("dtype");
    auto sh = entry.find("shape");
    auto off = entry.find("data_offsets");
    if (dt == entry.end() || !dt->is_string()) return bad("missing string \"dtype\"");
    if (sh == entry.end() || !sh->is_array()) return bad("missing array \"shape\"");
    if (off == entry.end() || !off->is_array() || off->size() != 2 ||
        !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned()) {
      return bad("\"data_offsets\" must be two non-negative integers");
    }
    SafetensorsTensor t;
    t.name = name;
    if (!ParseDtype(dt->get<std::string>(), &t.dtype)) {
      return Unimplemented(fmt::format("{}: tensor \"{}\": dtype \"{}\" is not supported", path,
                                       name, dt->get<std::string>()));
    }
    for (const json& d : *sh) {
      if (!d.is_number_unsigned()) return bad("shape entries must be non-negative integers");
      t.shape.push_back(d.get<int64_t>());
    }
    const uint64_t begin = (*off)[0].get<uint64_t>();
    const uint64_t end = (*off)[1].get<uint64_t>();
    if (begin > end) return bad(fmt::format("data_offsets [{}, {}) are reversed", begin, end));
    if (end > data_size) {
      return DataLoss(fmt::format(
          "{}: tensor \"{}\": data_offsets [{}, {}) run past the end of the data ({} bytes); "
          "truncated file?",
          path, name, begin, end, data_size));
    }
    const uint64_t expected = static_cast<uint64_t>(t.numel()) * SafetensorsDtypeSize(t.dtype);
    if (end - begin != expected) {
      return bad(fmt::format("data_offsets span {} bytes but shape x dtype needs {}", end - begin,
                             expected));
    }
    t.data = data + begin;
    t.num_bytes = end - begin;
    ranges.emplace_back(begin, end);
    file->tensors_.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) {
      return InvalidArgument(
          fmt::format("{}: tensors overlap at data offset {}", path, ranges[i].first));
    }
  }
  std::sort(file->tensors_.begin(), file->tensors_.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return file;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(map_, map_size_);
}

const SafetensorsTensor* SafetensorsFile::Find(std::string_view name) const {
  auto it =
      std::lower_bound(tensors_.begin(), tensors_.end(), name,
                       [](const SafetensorsTensor& t, std::string_view n) { return t.name < n; });
  if (it == tensors_.end() || it->name != name) return nullptr;
  return &*it;
}

Status WriteSafetensors(const std::string& path, const std::vector<SafetensorsTensorView>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  std::vector<const SafetensorsTensorView*> order;
  for (const auto& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const auto* a, const auto* b) { return a->name < b->name; });

  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  std::vector<size_t> sizes;
  uint64_t offset = 0;
  for (const auto* t : order) {
    if (t->name == "__metadata__" || !seen.insert(t->name).second) {
      return InvalidArgument(
          fmt::format("{}: duplicate or reserved tensor name \"{}\"", path, t->name));
    }
    uint64_t numel = 1;
    for (int64_t d : t->shape) {
      if (d < 0) {
        return InvalidArgument(
            fmt::format("{}: tensor \"{}\" has a negative dimension", path, t->name));
      }
      numel *= static_cast<uint64_t>(d);
    }
    const uint64_t n = numel * SafetensorsDtypeSize(t->dtype);
    if (n > 0 && t->data == nullptr) {
      return InvalidArgument(fmt::format("{}: tensor \"{}\" has no data", path, t->name));
    }
    header[t->name] = {{"dtype", SafetensorsDtypeName(t->dtype)},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + n}}};
    sizes.push_back(n);
    offset += n;
  }
  std::string header_text = header.dump();
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  const uint64_t header_len = header_text.size();

  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return Internal(fmt::format("{}: cannot open for writing: {}", tmp, std::strerror(errno)));
  }
  FileCloser closer(f);
  bool ok = std::fwrite(&header_len, 8, 1, f) == 1 &&
            std::fwrite(header_text.data(), 1, header_text.size(), f) == header_text.size();
  for (size_t i = 0; ok && i < order.size(); ++i) {
    if (sizes[i] == 0) continue;
    ok = std::fwrite(order[i]->data, 1, sizes[i], f) == sizes[i];
  }
  ok = closer.Close() && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    return Internal(fmt::format("{}: write failed: {}", path, std::strerror(errno)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Internal(fmt::format("{}: rename failed: {}", path, std::strerror(errno)));
  }
  return Status::Ok();
}

}  // namespace egca::trainer
