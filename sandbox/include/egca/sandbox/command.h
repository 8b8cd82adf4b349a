// Running a trusted tool (a compiler, a symbolizer) as a subprocess of the caller, with a
// wall-clock limit and bounded captured output. This is not isolation: the command is
// egca's own choice (e.g. clang++ on a candidate's source), run with the caller's
// privileges. Candidate programs run through ForkServer, never through this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "egca/core/status.h"

namespace egca::sandbox {

struct CommandOptions {
  double wall_seconds = 60;          // the process group is killed (SIGKILL) past this
  uint64_t output_bytes = 1u << 20;  // stdout and stderr each kept up to this; more is drained
  std::string stdin_data;            // fed to fd 0, then EOF
  std::string cwd;                   // empty: the caller's

  // Options with a wall limit (and output bound), the rest default.
  static CommandOptions Within(double seconds, uint64_t output = 1u << 20) {
    CommandOptions o;
    o.wall_seconds = seconds;
    o.output_bytes = output;
    return o;
  }
};

struct CommandResult {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  bool timed_out = false;
  std::string stdout_data;
  std::string stderr_data;
  double wall_seconds = 0;
  bool ok() const { return !timed_out && signal == 0 && exit_code == 0; }
};

// Runs argv[0] (looked up in PATH) with argv in its own process group. The command
// failing is a result; a Status error means it could not be started (NOT_FOUND names the
// program) or INVALID_ARGUMENT for an empty argv.
StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                   const CommandOptions& options = {});

}  // namespace egca::sandbox
