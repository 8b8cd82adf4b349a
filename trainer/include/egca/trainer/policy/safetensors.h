// Reading and writing the safetensors format, written against the published layout:
//
//   [8 bytes: N, little-endian u64][N bytes: JSON header][raw tensor bytes]
//
// The header maps tensor names to {"dtype", "shape", "data_offsets": [begin, end)} with
// offsets relative to the start of the raw bytes, plus an optional "__metadata__" object of
// string -> string. Torch-free: tensors are exposed as typed byte ranges; conversion to
// torch tensors lives in checkpoint.cpp. Little-endian hosts only (as is the format).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/status.h"

namespace egca::trainer {

enum class SafetensorsDtype { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool };

// "F32", "BF16", ... (the header spelling).
const char* SafetensorsDtypeName(SafetensorsDtype dtype);
// Bytes per element.
size_t SafetensorsDtypeSize(SafetensorsDtype dtype);

// One tensor inside an open file. `data` is borrowed from the SafetensorsFile that produced
// it and valid while that file object lives; it may be unaligned.
struct SafetensorsTensor {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::kF32;
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;  // Borrowed.
  size_t num_bytes = 0;
  int64_t numel() const;
};

// A read-only, memory-mapped safetensors file whose header has been fully validated:
// every entry has a known dtype, non-negative shape, offsets inside the file whose length
// matches shape x dtype size, and no two tensors overlap. Errors name the file and tensor.
class SafetensorsFile {
 public:
  // DATA_LOSS for truncated files / offsets out of range, INVALID_ARGUMENT for a malformed
  // header, UNIMPLEMENTED for a dtype outside SafetensorsDtype (e.g. F8_E4M3), NOT_FOUND
  // for a missing file.
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  // Tensors in header order sorted by name.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  // nullptr when absent.
  const SafetensorsTensor* Find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;  // Owned (munmap in the destructor).
  size_t map_size_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A tensor to write: the bytes are borrowed for the duration of the call.
struct SafetensorsTensorView {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::kF32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // Borrowed; numel x dtype size bytes, little-endian.
};

// Writes tensors to `path` (sorted by name, contiguous, header padded with spaces to a
// multiple of 8 bytes so every tensor starts 8-byte aligned). Streams to "<path>.tmp" and
// renames, so a crash never leaves a half-written file under the final name. Duplicate
// names, negative dims or a null data pointer are INVALID_ARGUMENT.
Status WriteSafetensors(const std::string& path, const std::vector<SafetensorsTensorView>& tensors,
                        const std::map<std::string, std::string>& metadata);

}  // namespace egca::trainer
