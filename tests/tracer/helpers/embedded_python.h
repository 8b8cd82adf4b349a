// Test helper: the embedded interpreter initialized inside the test binary (isolated
// config, harness loaded), so harness behaviour can be tested without a fork server.
#pragma once

#include <string>

#include "egca/tracer/exec.pb.h"

namespace egca::tracer::testing {

// Initializes the interpreter once per process (fails the test on error).
void EnsureEmbeddedPython();

// What the parent compares a completed run with (null: nothing to compare).
struct Expected {
  const std::string* json = nullptr;         // call tests: the expected returned value
  const std::string* stdout_text = nullptr;  // stdio tests: the expected output
};

// Runs `request` in-process (trusted programs only), judges a completed call or stdio run
// as the executor's parent does (tracer/src/judge.h: outcome EXEC_OK or
// EXEC_WRONG_ANSWER with actual/expected/detail) and returns the completion record, or
// the preparation record when the test is malformed (EXEC_TEST_ERROR). What the program
// wrote to file descriptor 1 goes to *stdout_data (if given).
proto::ExecResult RunInProcess(const proto::ExecRequest& request, const Expected& expected = {},
                               std::string* stdout_data = nullptr);

// Path of a file under the shared data directory.
std::string DataPath(const std::string& relative);

}  // namespace egca::tracer::testing
