// The C++ executor's fork server is its own program (egca-cpp-server, exec mode): nothing
// the calling process holds (an expected output, a key, a model) is in a C++ candidate's
// address space. tracer::ServerStart::kFork, where the server is a fork of the caller, is
// the control: there the same candidate finds the expected output and passes.
// Also: how the server program is found, and the error when it is not.
#include <algorithm>
#include <filesystem>
#include <random>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "egca/core/files.h"
#include "egca/cpp/executor.h"
#include "egca/sandbox/server_binary.h"
#include "egca/sandbox/verdict.h"

namespace egca::cpp {
namespace {

using sandbox::VerdictKind;

// Scans /proc/self/maps' readable regions for "EGCA-HOSTILE-ANSWER:" and 32 hex digits
// and prints the first hit, "not found", or "scan broken" when it cannot find a marker of
// its own (so "not found" means the scan worked).
std::string Scanner() {
  auto source = ReadFile(std::string(EGCA_SOURCE_DIR) +
                         "/tests/sandbox/hostile_cpp/scan_memory_for_answer.cpp");
  return source.ok() ? *source : std::string();
}

// A fresh answer in this process's heap only (never in a file, never sent to a child).
std::string NewAnswer() {
  std::random_device rd;
  std::string answer = std::string("EGCA-HOSTILE") + "-ANSWER:";
  for (int i = 0; i < 4; ++i) answer += fmt::format("{:08x}", rd());
  return answer;
}

CppExecutorOptions Options(tracer::ServerStart start) {
  CppExecutorOptions options;
  options.compiler.cache_dir = std::string(EGCA_BINARY_DIR) + "/cpp-cache";
  options.server_start = start;
  return options;
}

tracer::RunOptions Limits() {
  tracer::RunOptions options;
  options.limits.wall_seconds = 10;
  options.limits.cpu_seconds = 5;
  return options;
}

TEST(CppExecutorCallerMemory, ForkedServerLeaksTheCallersAnswerExecdServerDoesNot) {
  const std::string scanner = Scanner();
  ASSERT_FALSE(scanner.empty());
  const std::string answer = NewAnswer();
  // The expected output as the caller holds it, made before either server starts.
  const tracer::TestCase test = tracer::TestCase::Stdio("", answer + "\n");

  auto control = CppExecutor::Create(Options(tracer::ServerStart::kFork));
  ASSERT_TRUE(control.ok()) << control.status().ToString();
  auto leaked = (*control)->RunAll(scanner, {test}, Limits());
  ASSERT_TRUE(leaked.ok()) << leaked.status().ToString();
  EXPECT_EQ(leaked->tests.at(0).verdict.kind, VerdictKind::kOk)
      << "the control: a fork of this process holds the answer; got "
      << sandbox::VerdictName(leaked->tests[0].verdict.kind) << " stdout="
      << leaked->tests[0].stdout_data << " stderr=" << leaked->tests[0].stderr_data;

  auto executor = CppExecutor::Create(Options(tracer::ServerStart::kExec));
  ASSERT_TRUE(executor.ok()) << executor.status().ToString();
  auto result = (*executor)->RunAll(scanner, {test}, Limits());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->tests.at(0).verdict.kind, VerdictKind::kWrongAnswer)
      << sandbox::VerdictName(result->tests[0].verdict.kind) << " "
      << result->tests[0].verdict.detail << " " << result->tests[0].stderr_data;
  EXPECT_EQ(result->tests[0].stdout_data, "not found\n");
}

TEST(CppExecutorCallerMemory, ServerProgramIsFoundInTheBuildTree) {
  auto found = sandbox::FindServerBinary(kCppServerName, "");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(std::filesystem::path(*found).filename(), kCppServerName);
  const auto candidates = sandbox::ServerBinaryCandidates(kCppServerName);
  // The build tree's path is baked in: found even from a binary elsewhere in the tree.
  EXPECT_NE(std::find(candidates.begin(), candidates.end(),
                      std::string(EGCA_BINARY_DIR) + "/cpp/" + kCppServerName),
            candidates.end());
}

TEST(CppExecutorCallerMemory, MissingServerProgramNamesThePathTried) {
  CppExecutorOptions options = Options(tracer::ServerStart::kExec);
  options.server_binary = "/nonexistent/egca-cpp-server";
  auto executor = CppExecutor::Create(options);
  ASSERT_FALSE(executor.ok());
  EXPECT_EQ(executor.status().code(), StatusCode::kNotFound);
  EXPECT_NE(executor.status().message().find("/nonexistent/egca-cpp-server"), std::string::npos)
      << executor.status().ToString();
}

}  // namespace
}  // namespace egca::cpp
