// Shared helpers for the tests that drive the egca-train binary: reading a run's files and
// killing a run at a checkpoint (the SIGKILL + resume tests of the single-agent, multi-agent
// and data-parallel trainers).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "egca/core/files.h"

namespace egca::trainer::testing {

// The whole file, or "" when it cannot be read.
inline std::string Slurp(const std::string& path) {
  auto s = ReadFile(path);
  return s.ok() ? *s : "";
}

// Polls until `path` exists or `limit` passes; whether it exists.
inline bool WaitForFile(const std::string& path, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// Runs `argv` (stderr to /dev/null), SIGKILLs it as soon as `marker` exists (or after `limit`)
// and reaps it. True when the kill ended it, false when it had already exited by itself (the
// kill came too late to test anything) or could not start.
inline bool RunAndKillAt(const std::vector<std::string>& argv, const std::string& marker,
                         std::chrono::seconds limit) {
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  WaitForFile(marker, limit);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

}  // namespace egca::trainer::testing
