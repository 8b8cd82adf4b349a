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

// C++ programs (egca::cpp: clang++ and the same sandbox): a test main that asserts, stdin
// tests, the language from the extension, --lang, or the content, and the Python-only
// options refused with exit 2.
TEST_F(EgcaRun, CppAssertMainAndTrace) {
  std::string prog = Write("add.cpp", "int add(int a, int b) {\n  int s = a + b;\n  return s;\n}\n");
  std::string pass = Write("pass.cpp", "#include <cassert>\nint main() { assert(add(1, 2) == 3); }\n");
  std::string fail = Write("fail.cpp", "#include <cassert>\nint main() {\n  assert(add(2, 2) == 5);\n}\n");
  RunOutput ok = Invoke(prog + " --tests " + pass);
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("passed 1/1"), std::string::npos) << ok.out;
  RunOutput wrong = Invoke(prog + " --tests " + fail + " --trace");
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out;
  EXPECT_NE(wrong.out.find("WRONG_ANSWER"), std::string::npos) << wrong.out;
  // The failing assert of the test's main, by its line in the test file.
  EXPECT_NE(wrong.out.find("test line 3"), std::string::npos) << wrong.out;
  // Per-statement snapshots: after line 2, s = 4; line 3 returns 4.
  EXPECT_NE(wrong.out.find("A 2 a=2 b=2 s=4"), std::string::npos) << wrong.out;
  EXPECT_NE(wrong.out.find("R 3 return=4"), std::string::npos) << wrong.out;
}

TEST_F(EgcaRun, CppStdioJsonAndDetection) {
  std::string src = "#include <iostream>\nint main() { long a, b; std::cin >> a >> b; "
                    "std::cout << a + b << \"\\n\"; }\n";
  std::string prog = Write("sum", src);  // no extension: the content says C++
  std::string in = Write("in.txt", "1 2\n");
  std::string out = Write("out.txt", "3\n");
  RunOutput r = Invoke(prog + " --stdin " + in + " --expect-stdout " + out + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["language"], "cpp");
  EXPECT_EQ(j["tests"][0]["stdout"], "3\n");
  // A crash is a run-time error at the faulting statement.
  std::string crash = Write("crash.txt", "#include <cstdio>\nint main() {\n  int* p = nullptr;\n"
                                         "  std::printf(\"%d\\n\", *p);\n}\n");
  RunOutput c = Invoke("--lang cpp " + crash + " --stdin " + in + " --json");
  EXPECT_EQ(c.exit_code, 1) << c.out;
  nlohmann::json cj = nlohmann::json::parse(c.out, nullptr, false);
  ASSERT_FALSE(cj.is_discarded()) << c.out;
  EXPECT_EQ(cj["tests"][0]["verdict"], "RUNTIME_ERROR");
  EXPECT_EQ(cj["tests"][0]["error_type"], "SIGSEGV");
  EXPECT_EQ(cj["tests"][0]["line"], 4);
}

TEST_F(EgcaRun, CppRefusesPythonOnlyOptions) {
  std::string prog = Write("f.cpp", "int f() { return 1; }\n");
  for (const std::string& args : {std::string(" --fn f --input '[]'"), std::string(" --apps --stdin x"),
                                  std::string("")}) {
    RunOutput r = Invoke(prog + args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out;
    EXPECT_EQ(r.out.rfind("egca-run: ", 0), 0u) << r.out;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
  }
  std::string no_main = Write("t.cpp", "// nothing\n");
  RunOutput r = Invoke(prog + " --tests " + no_main);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("t.cpp: no main()"), std::string::npos) << r.out;
  RunOutput bad_lang = Invoke(prog + " --lang rust --tests " + no_main);
  EXPECT_EQ(bad_lang.exit_code, 2) << bad_lang.out;
  EXPECT_NE(bad_lang.out.find("--lang"), std::string::npos) << bad_lang.out;
}

}  // namespace
