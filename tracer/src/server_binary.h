// Where the executor's fork server program (egca-py-server) is: the executor starts it
// instead of forking the calling process (docs/sandbox.md, "Exec mode"). The search is
// sandbox::FindServerBinary's.
#pragma once

#include <string>
#include <vector>

#include "egca/core/status.h"
#include "egca/sandbox/server_binary.h"

namespace egca::tracer {

inline constexpr char kPyServerName[] = "egca-py-server";

// sandbox::ServerBinaryCandidates(kPyServerName).
inline std::vector<std::string> PyServerCandidates() {
  return sandbox::ServerBinaryCandidates(kPyServerName);
}

// sandbox::FindServerBinary(kPyServerName, explicit_path).
inline StatusOr<std::string> FindPyServerBinary(const std::string& explicit_path) {
  return sandbox::FindServerBinary(kPyServerName, explicit_path);
}

}  // namespace egca::tracer
