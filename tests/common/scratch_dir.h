// A private temporary directory for one test process, removed with the object.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace egca::testing {

class ScratchDir {
 public:
  // `stem` names the directory; the pid keeps tests ctest runs in parallel apart.
  explicit ScratchDir(const std::string& stem)
      : path_(std::filesystem::temp_directory_path() / (stem + "_" + std::to_string(getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `text` to `name` inside the directory; returns the file's path.
  std::string Write(const std::string& name, const std::string& text) const {
    std::filesystem::path p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace egca::testing
