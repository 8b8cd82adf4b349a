// The hostile C++ corpus (tests/sandbox/hostile_cpp/*.cpp, expected.json): every program
// compiled by egca::cpp and run in the sandbox ends as the expected verdict, and none of
// them leaves a file outside its private directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "egca/core/files.h"
#include "egca/cpp/executor.h"

namespace egca::cpp {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kDir = std::string(EGCA_SOURCE_DIR) + "/tests/sandbox/hostile_cpp/";

const char* kSentinels[] = {"/tmp/egca_hostile_cpp_exec", "/tmp/egca_hostile_cpp_system",
                            "/tmp/egca_hostile_cpp_file", "/var/tmp/egca_hostile_cpp_file",
                            "/root/egca_hostile_cpp_file", "/etc/egca_hostile_cpp_file"};

TEST(HostileCpp, EveryProgramBecomesItsVerdict) {
  for (const char* s : kSentinels) {
    std::error_code ec;
    fs::remove(s, ec);
  }
  CppExecutorOptions options;
  options.compiler.cache_dir = std::string(EGCA_BINARY_DIR) + "/cpp-cache";
  auto ex = CppExecutor::Create(options);
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  auto text = ReadFile(kDir + "expected.json");
  ASSERT_TRUE(text.ok());
  json expected = json::parse(*text);
  ASSERT_GE(expected.size(), 15u);
  tracer::RunOptions run;
  run.limits.wall_seconds = 3;
  run.limits.cpu_seconds = 2;
  run.limits.memory_bytes = 1ull << 30;
  run.limits.output_bytes = 1u << 20;
  for (const json& e : expected) {
    const std::string file = e["file"];
    SCOPED_TRACE(file);
    auto source = ReadFile(kDir + file);
    ASSERT_TRUE(source.ok());
    tracer::TestCase test = e.contains("test_code")
                                ? tracer::TestCase::Asserts(e["test_code"].get<std::string>())
                                : e.contains("stdout")
                                      ? tracer::TestCase::Stdio("", e["stdout"].get<std::string>())
                                      : tracer::TestCase::Stdio("");
    auto result = (*ex)->RunAll(*source, {test}, run);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    const sandbox::Verdict& v = result->tests.at(0).verdict;
    EXPECT_EQ(sandbox::VerdictName(v.kind), e["verdict"].get<std::string>())
        << "detail=" << v.detail << " error_type=" << v.error_type << " message=" << v.message
        << " stderr=" << result->tests[0].stderr_data.substr(0, 300);
    if (e.contains("detail")) {
      EXPECT_NE(v.detail.find(e["detail"].get<std::string>()), std::string::npos) << v.detail;
    }
    if (e.contains("error_type")) {
      EXPECT_EQ(v.error_type, e["error_type"].get<std::string>());
    }
  }
  for (const char* s : kSentinels) EXPECT_FALSE(fs::exists(s)) << s;
}

}  // namespace
}  // namespace egca::cpp
