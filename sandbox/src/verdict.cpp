#include "egca/sandbox/verdict.h"

#include <array>
#include <utility>

namespace egca::sandbox {
namespace {

constexpr std::array<std::pair<VerdictKind, const char*>, 9> kNames = {{
    {VerdictKind::kOk, "OK"},
    {VerdictKind::kWrongAnswer, "WRONG_ANSWER"},
    {VerdictKind::kSyntaxError, "SYNTAX_ERROR"},
    {VerdictKind::kRuntimeError, "RUNTIME_ERROR"},
    {VerdictKind::kTimeout, "TIMEOUT"},
    {VerdictKind::kMemoryLimit, "MEMORY_LIMIT"},
    {VerdictKind::kOutputLimit, "OUTPUT_LIMIT"},
    {VerdictKind::kKilled, "KILLED"},
    {VerdictKind::kViolation, "VIOLATION"},
}};

}  // namespace

const char* VerdictName(VerdictKind kind) {
  for (const auto& [k, name] : kNames) {
    if (k == kind) return name;
  }
  return "UNKNOWN";
}

bool ParseVerdictName(const std::string& name, VerdictKind* out) {
  for (const auto& [k, n] : kNames) {
    if (name == n) {
      *out = k;
      return true;
    }
  }
  return false;
}

}  // namespace egca::sandbox
