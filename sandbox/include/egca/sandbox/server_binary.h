// Where a fork server program (exec mode, ForkServerOptions::server_binary) is: the
// executors start such a program (egca-py-server, egca-cpp-server) instead of forking the
// calling process (docs/sandbox.md, "Exec mode").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "egca/core/status.h"

namespace egca::sandbox {

// The places FindServerBinary() looks for the program `name`, in order: $EGCA_SERVER_DIR,
// the directory of the running executable (/proc/self/exe), the directory of the object
// holding this code (dladdr: a Python extension module linking egca finds a copy next to
// itself), the build tree's folders of the modules that build server programs (tracer/,
// cpp/; baked in at configure time), the install prefix's libexec/egca. Duplicates are
// removed.
std::vector<std::string> ServerBinaryCandidates(std::string_view name);

// `explicit_path` non-empty: that file and nothing else. Otherwise the first
// ServerBinaryCandidates(name) entry that is an executable regular file. Returns an
// absolute path. Errors: NOT_FOUND naming every path tried.
StatusOr<std::string> FindServerBinary(std::string_view name, std::string_view explicit_path);

}  // namespace egca::sandbox
