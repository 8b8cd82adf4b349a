#include "server_binary.h"

#include <dlfcn.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

// Set by tracer/CMakeLists.txt for this file only.
#ifndef EGCA_PY_SERVER_BUILD_DIR
#define EGCA_PY_SERVER_BUILD_DIR ""
#endif
#ifndef EGCA_PY_SERVER_INSTALL_DIR
#define EGCA_PY_SERVER_INSTALL_DIR ""
#endif

namespace egca::tracer {
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

std::vector<std::string> PyServerCandidates() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("EGCA_SERVER_DIR"); env != nullptr && env[0] != '\0') {
    dirs.emplace_back(env);
  }
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) dirs.push_back(DirectoryOf(std::string(exe, static_cast<size_t>(n))));
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&PyServerCandidates), &info) != 0 &&
      info.dli_fname != nullptr && info.dli_fname[0] != '\0') {
    dirs.push_back(DirectoryOf(Absolute(info.dli_fname)));
  }
  dirs.emplace_back(EGCA_PY_SERVER_BUILD_DIR);
  dirs.emplace_back(EGCA_PY_SERVER_INSTALL_DIR);
  std::vector<std::string> paths;
  for (const std::string& dir : dirs) {
    if (dir.empty()) continue;
    std::string path = dir + "/" + kPyServerName;
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  }
  return paths;
}

StatusOr<std::string> FindPyServerBinary(const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    if (IsExecutableFile(explicit_path)) return Absolute(explicit_path);
    return NotFound(fmt::format("the executor's fork server program {} (ExecutorOptions::"
                                "server_binary) is not an executable file",
                                explicit_path));
  }
  const std::vector<std::string> candidates = PyServerCandidates();
  for (const std::string& path : candidates) {
    if (IsExecutableFile(path)) return Absolute(path);
  }
  return NotFound(fmt::format(
      "the executor's fork server program {} was not found; tried: {} (build the {} target, "
      "set EGCA_SERVER_DIR to its directory, or ExecutorOptions::server_binary)",
      kPyServerName, fmt::join(candidates, ", "), kPyServerName));
}

}  // namespace egca::tracer
