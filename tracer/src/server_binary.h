// Where the executor's fork server program (egca-py-server) is: the executor starts it
// instead of forking the calling process (docs/sandbox.md, "Exec mode").
#pragma once

#include <string>
#include <vector>

#include "egca/core/status.h"

namespace egca::tracer {

inline constexpr char kPyServerName[] = "egca-py-server";

// The places FindPyServerBinary() looks, in order, without the explicit path:
// $EGCA_SERVER_DIR, the directory of the running executable (/proc/self/exe), the
// directory of the object holding this code (dladdr: a Python extension module linking
// egca::tracer finds a copy next to itself), the build tree's tracer/ folder (baked in
// at configure time), the install prefix's libexec/egca. Duplicates are removed.
std::vector<std::string> PyServerCandidates();

// `explicit_path` non-empty: that file and nothing else. Otherwise the first
// PyServerCandidates() entry that is an executable regular file. Errors: NOT_FOUND naming
// every path tried.
StatusOr<std::string> FindPyServerBinary(const std::string& explicit_path);

}  // namespace egca::tracer
