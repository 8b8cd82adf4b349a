#include "egca/sandbox/server_binary.h"

#include <dlfcn.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

// Set by sandbox/CMakeLists.txt for this file only. EGCA_SERVER_BUILD_DIRS: ':'-separated.
#ifndef EGCA_SERVER_BUILD_DIRS
#define EGCA_SERVER_BUILD_DIRS ""
#endif
#ifndef EGCA_SERVER_INSTALL_DIR
#define EGCA_SERVER_INSTALL_DIR ""
#endif

namespace egca::sandbox {
namespace {

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? std::string() : path.substr(0, slash);
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string Absolute(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

}  // namespace

std::vector<std::string> ServerBinaryCandidates(std::string_view name) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("EGCA_SERVER_DIR"); env != nullptr && env[0] != '\0') {
    dirs.emplace_back(env);
  }
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) dirs.push_back(DirectoryOf(std::string(exe, static_cast<size_t>(n))));
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ServerBinaryCandidates), &info) != 0 &&
      info.dli_fname != nullptr && info.dli_fname[0] != '\0') {
    dirs.push_back(DirectoryOf(Absolute(info.dli_fname)));
  }
  const std::string_view build_dirs = EGCA_SERVER_BUILD_DIRS;
  for (size_t begin = 0; begin <= build_dirs.size();) {
    size_t end = build_dirs.find(':', begin);
    if (end == std::string_view::npos) end = build_dirs.size();
    dirs.emplace_back(build_dirs.substr(begin, end - begin));
    begin = end + 1;
  }
  dirs.emplace_back(EGCA_SERVER_INSTALL_DIR);
  std::vector<std::string> paths;
  for (const std::string& dir : dirs) {
    if (dir.empty()) continue;
    std::string path = fmt::format("{}/{}", dir, name);
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  }
  return paths;
}

StatusOr<std::string> FindServerBinary(std::string_view name, std::string_view explicit_path) {
  if (!explicit_path.empty()) {
    const std::string path(explicit_path);
    if (IsExecutableFile(path)) return Absolute(path);
    return NotFound(fmt::format("the fork server program {} (the executor's server_binary "
                                "option) is not an executable file",
                                path));
  }
  const std::vector<std::string> candidates = ServerBinaryCandidates(name);
  for (const std::string& path : candidates) {
    if (IsExecutableFile(path)) return Absolute(path);
  }
  return NotFound(fmt::format(
      "the fork server program {} was not found; tried: {} (build the {} target, set "
      "EGCA_SERVER_DIR to its directory, or the executor's server_binary option)",
      name, fmt::join(candidates, ", "), name));
}

}  // namespace egca::sandbox
