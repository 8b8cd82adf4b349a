// egca-run as a user runs it: exit codes, the verdict table, --json, --tests formats,
// usage errors naming the option or file.
#include <gtest/gtest.h>

#include "common/run_command.h"
#include "common/scratch_dir.h"
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

namespace fs = std::filesystem;

using RunOutput = egca::testing::CommandOutput;  // stdout and stderr together

std::string ToolPath() { return std::string(EGCA_BINARY_DIR) + "/tools/egca-run/egca-run"; }

RunOutput Invoke(const std::string& args) {
  return egca::testing::RunCommand(ToolPath() + " " + args + " 2>&1");
}

class EgcaRun : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(ToolPath())) << ToolPath() << " is not built";
  }
  std::string Write(const std::string& name, const std::string& text) {
    return scratch_.Write(name, text);
  }
  egca::testing::ScratchDir scratch_{"egca_run_tool"};
  const fs::path& dir_ = scratch_.path();
};

TEST_F(EgcaRun, CallTestsTableAndExitCodes) {
  std::string prog = Write("add.py", "def add(a, b):\n    return a + b\n");
  RunOutput pass = Invoke(prog + " --fn add --input '[1, 2]' --expect 3");
  EXPECT_EQ(pass.exit_code, 0) << pass.out;
  EXPECT_NE(pass.out.find("OK"), std::string::npos) << pass.out;
  EXPECT_NE(pass.out.find("passed 1/1"), std::string::npos) << pass.out;
  RunOutput fail =
      Invoke(prog + " --fn add --input '[1, 2]' --expect 3 --input '[2, 2]' --expect 5");
  EXPECT_EQ(fail.exit_code, 1) << fail.out;
  EXPECT_NE(fail.out.find("WRONG_ANSWER"), std::string::npos) << fail.out;
  EXPECT_NE(fail.out.find("R_hat = 0.500"), std::string::npos) << fail.out;
}

TEST_F(EgcaRun, JsonOutputIsMachineReadable) {
  std::string prog = Write("div.py", "def f(x):\n    return 1 // x\n");
  RunOutput r = Invoke(prog + " --fn f --input '[0]' --json");
  EXPECT_EQ(r.exit_code, 1);
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["total"], 1);
  EXPECT_EQ(j["tests"][0]["verdict"], "RUNTIME_ERROR");
  EXPECT_EQ(j["tests"][0]["error_type"], "ZeroDivisionError");
  EXPECT_EQ(j["tests"][0]["line"], 2);
}

TEST_F(EgcaRun, StdinTestsAndAppsJson) {
  std::string prog = Write("sum.py", "print(sum(map(int, input().split())))\nexit()\n");
  std::string in = Write("in.txt", "1 2 3\n");
  std::string out = Write("out.txt", "6\n");
  RunOutput r = Invoke(prog + " --stdin " + in + " --expect-stdout " + out);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::string io =
      Write("io.json", R"({"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "11\n"]})");
  RunOutput apps = Invoke(prog + " --tests " + io);
  EXPECT_EQ(apps.exit_code, 1) << apps.out;
  EXPECT_NE(apps.out.find("passed 1/2"), std::string::npos) << apps.out;
}

TEST_F(EgcaRun, HumanEvalCheckAndAssertFiles) {
  std::string prog = Write("inc.py", "def inc(x):\n    return x + 1\n");
  std::string check = Write("check.py", "def check(candidate):\n    assert candidate(1) == 2\n");
  EXPECT_EQ(Invoke(prog + " --tests " + check + " --entry-point inc").exit_code, 0);
  RunOutput missing = Invoke(prog + " --tests " + check);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.out.find("--entry-point"), std::string::npos) << missing.out;
  std::string asserts = Write("asserts.py", "assert inc(1) == 2\nassert inc(2) == 4\n");
  RunOutput r = Invoke(prog + " --tests " + asserts);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("passed 1/2"), std::string::npos) << r.out;
}

TEST_F(EgcaRun, LimitsAreOverridable) {
  std::string prog = Write("loop.py", "def f():\n    while True:\n        pass\n");
  RunOutput r = Invoke(prog + " --fn f --timeout 0.5");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("TIMEOUT"), std::string::npos) << r.out;
}

TEST_F(EgcaRun, BadUsageAndUnreadableInputExitTwo) {
  std::string prog = Write("p.py", "x = 1\n");
  RunOutput missing = Invoke(dir_.string() + "/nope.py --fn f");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.out.find("nope.py"), std::string::npos) << missing.out;
  std::string latin1 = Write("latin1.py", "x = '\xe9'\n");
  RunOutput bad_utf8 = Invoke(latin1 + " --fn f");
  EXPECT_EQ(bad_utf8.exit_code, 2);
  EXPECT_NE(bad_utf8.out.find("latin1.py"), std::string::npos) << bad_utf8.out;
  RunOutput no_tests = Invoke(prog);
  EXPECT_EQ(no_tests.exit_code, 2);
  RunOutput bad_json = Invoke(prog + " --fn f --input 'not json'");
  EXPECT_EQ(bad_json.exit_code, 2);
  EXPECT_NE(bad_json.out.find("--input"), std::string::npos) << bad_json.out;
  RunOutput unknown = Invoke(prog + " --frobnicate");
  EXPECT_EQ(unknown.exit_code, 2);
  // One line, naming the tool and the option.
  EXPECT_EQ(unknown.out.rfind("egca-run: ", 0), 0u) << unknown.out;
  EXPECT_NE(unknown.out.find("--frobnicate"), std::string::npos) << unknown.out;
  EXPECT_EQ(unknown.out.find('\n'), unknown.out.size() - 1) << unknown.out;
}

}  // namespace
