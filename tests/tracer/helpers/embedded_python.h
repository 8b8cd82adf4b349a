// Test helper: the embedded interpreter initialized inside the test binary (isolated
// config, harness loaded), so harness behaviour can be tested without a fork server.
#pragma once

#include <string>

#include "egca/tracer/exec.pb.h"

namespace egca::tracer::testing {

// Initializes the interpreter once per process (fails the test on error).
void EnsureEmbeddedPython();

// Runs `request` in-process (trusted programs only) and returns the completion record.
proto::ExecResult RunInProcess(const proto::ExecRequest& request);

// Path of a file under the shared data directory.
std::string DataPath(const std::string& relative);

}  // namespace egca::tracer::testing
