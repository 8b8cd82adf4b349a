// The executor's fork server is its own program (ServerStart::kExec, egca-py-server):
// nothing the calling process holds (an expected answer, a key, a model) is in a
// candidate's address space. ServerStart::kFork, where the server is a fork of the
// caller, is the control: there the same candidate finds the answer and passes.
// Also: how the server program is found, and the errors when it is not.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "egca/sandbox/verdict.h"
#include "egca/tracer/executor.h"
#include "egca/tracer/test_case.h"
#include "server_binary.h"

namespace egca::tracer {
namespace {

using sandbox::VerdictKind;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The corpus program that scans its own memory (ctypes) for "EGCA-HOSTILE-ANSWER:" and
// 32 hex digits and returns what it finds.
const std::string kScanner =
    Slurp(std::string(EGCA_SOURCE_DIR) + "/tests/sandbox/hostile/scan_memory_for_answer.py");

// A fresh answer in this process's heap only (never in a file, never sent to a child).
std::string NewAnswer() {
  std::random_device rd;
  std::string answer = std::string("EGCA-HOSTILE") + "-ANSWER:";
  for (int i = 0; i < 4; ++i) answer += fmt::format("{:08x}", rd());
  return answer;
}

RunOptions Limits() {
  RunOptions options;
  options.limits.wall_seconds = 10;
  options.limits.cpu_seconds = 5;
  return options;
}

TEST(TracerExecutorCallerMemory, ForkedServerLeaksTheCallersAnswerExecdServerDoesNot) {
  ASSERT_FALSE(kScanner.empty());
  const std::string answer = NewAnswer();
  // The expected value as the caller holds it: a JSON string in a TestCase.
  const TestCase test = TestCase::Call("solve", "[]", "\"" + answer + "\"");

  ExecutorOptions forked;
  forked.server_start = ServerStart::kFork;
  auto control = Executor::Create(forked);
  ASSERT_TRUE(control.ok()) << control.status().ToString();
  auto leaked = (*control)->Run(kScanner, test, Limits());
  ASSERT_TRUE(leaked.ok()) << leaked.status().ToString();
  EXPECT_EQ(leaked->verdict.kind, VerdictKind::kOk)
      << "the control: a fork of this process holds the answer; got "
      << sandbox::VerdictName(leaked->verdict.kind) << " " << leaked->verdict.actual << " "
      << leaked->stderr_data;

  auto executor = Executor::Create({});  // ServerStart::kExec
  ASSERT_TRUE(executor.ok()) << executor.status().ToString();
  auto result = (*executor)->Run(kScanner, test, Limits());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->verdict.kind, VerdictKind::kWrongAnswer)
      << sandbox::VerdictName(result->verdict.kind) << " " << result->verdict.detail << " "
      << result->stderr_data;
  EXPECT_EQ(result->verdict.actual, "'not found'");
}

TEST(TracerExecutorCallerMemory, ServerProgramIsFoundInTheBuildTree) {
  auto found = FindPyServerBinary("");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(std::filesystem::path(*found).filename(), kPyServerName);
  const auto candidates = PyServerCandidates();
  // The build tree's path is baked in: found even from a binary elsewhere in the tree.
  EXPECT_NE(std::find(candidates.begin(), candidates.end(),
                      std::string(EGCA_BINARY_DIR) + "/tracer/" + kPyServerName),
            candidates.end());
}

TEST(TracerExecutorCallerMemory, MissingServerProgramNamesThePathTried) {
  ExecutorOptions options;
  options.server_binary = "/nonexistent/egca-py-server";
  auto executor = Executor::Create(options);
  ASSERT_FALSE(executor.ok());
  EXPECT_EQ(executor.status().code(), StatusCode::kNotFound);
  EXPECT_NE(executor.status().message().find("/nonexistent/egca-py-server"), std::string::npos)
      << executor.status().ToString();
}

TEST(TracerExecutorCallerMemory, EgcaServerDirComesFirst) {
  // A directory holding a program of that name that is not a server: Create() must try
  // it (and fail at start-up), not one found later in the search.
  const std::string dir = fmt::format("/tmp/egca-server-dir-test-{}", getpid());
  std::filesystem::create_directories(dir);
  const std::string fake = dir + "/" + kPyServerName;
  std::ofstream(fake) << "#!/bin/sh\nexit 3\n";
  chmod(fake.c_str(), 0755);
  setenv("EGCA_SERVER_DIR", dir.c_str(), 1);
  EXPECT_EQ(PyServerCandidates().front(), fake);
  auto executor = Executor::Create({});
  unsetenv("EGCA_SERVER_DIR");
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(executor.ok());
  EXPECT_NE(executor.status().message().find("start-up"), std::string::npos)
      << executor.status().ToString();
}

}  // namespace
}  // namespace egca::tracer
