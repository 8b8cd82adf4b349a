// Running a command-line tool from a test: exit code and captured standard output.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace egca::testing {

struct CommandOutput {
  int exit_code = -1;  // -1: the command could not be started or did not exit normally
  std::string out;     // what the command wrote to stdout (add 2>&1 to capture stderr)
};

// Runs `command` through the shell.
inline CommandOutput RunCommand(const std::string& command) {
  CommandOutput r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) r.out.append(buffer, n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace egca::testing
