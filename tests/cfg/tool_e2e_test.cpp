// egca-cfg end to end: outputs and exit codes (0 ok, 1 does not parse, 2 bad input/usage).
#include <gtest/gtest.h>

#include "common/run_command.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

struct ToolRun {
  int code;
  std::string out;
};

ToolRun Tool(const std::string& args) {
  auto r = egca::testing::RunCommand(std::string(EGCA_BINARY_DIR) + "/tools/egca-cfg/egca-cfg " +
                                     args + " 2>&1");
  return {r.exit_code, r.out};
}

const std::string kGolden = std::string(EGCA_SOURCE_DIR) + "/tests/cfg/golden/";

TEST(EgcaCfgTool, DumpsTheGoldenCfg) {
  ToolRun r = Tool(kGolden + "while_else.py");
  EXPECT_EQ(r.code, 0);
  std::ifstream expected(kGolden + "while_else.cfg");
  std::string want((std::istreambuf_iterator<char>(expected)), std::istreambuf_iterator<char>());
  EXPECT_EQ(r.out, want);
}

TEST(EgcaCfgTool, BoundariesAndJson) {
  ToolRun r = Tool(kGolden + "while_else.py --function find --boundaries");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("b2 B2 3:4-3:22 (1 statement)"), std::string::npos) << r.out;
  ToolRun j = Tool(kGolden + "while_else.py --function find --boundaries --json");
  ASSERT_EQ(j.code, 0);
  nlohmann::json doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["scopes"].size(), 1u);
  EXPECT_EQ(doc["scopes"][0]["name"], "find");
  EXPECT_EQ(doc["scopes"][0]["boundaries"].size(), 7u);
  EXPECT_EQ(doc["scopes"][0]["blocks"][2]["successors"][0]["kind"], "true");
}

TEST(EgcaCfgTool, CompareReportsSimilarityAndGate) {
  ToolRun r = Tool(kGolden + "if_elif_else.py --compare " + kGolden + "if_elif_else.py --json");
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(doc["score"].get<double>(), 1.0);
  EXPECT_TRUE(doc["comparable"].get<bool>());
}

TEST(EgcaCfgTool, ExitCodes) {
  EXPECT_EQ(Tool(kGolden + "syntax_error.py").code, 1);
  ToolRun missing = Tool("/nonexistent/x.py");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("/nonexistent/x.py"), std::string::npos);
  ToolRun unknown = Tool(kGolden + "while_else.py --no-such-flag");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_EQ(unknown.out, "egca-cfg: The following argument was not expected: --no-such-flag\n");
  EXPECT_EQ(Tool(kGolden + "while_else.py --function nope").code, 2);
  std::string bad = std::string(EGCA_BINARY_DIR) + "/cfg_tool_non_utf8.py";
  {
    std::ofstream f(bad, std::ios::binary);
    f << "x = '\xff'\n";
  }
  ToolRun nu = Tool(bad);
  EXPECT_EQ(nu.code, 2);
  EXPECT_NE(nu.out.find("UTF-8"), std::string::npos) << nu.out;
}

// Issue 16, point 2: a directory, an empty file and options that conflict or would be
// ignored are one line naming the file or option, exit 2.
TEST(EgcaCfgTool, BadInputsAreOneLineExit2) {
  const std::string dir = ::testing::TempDir() + "egca_cfg_bad_inputs";
  std::filesystem::create_directories(dir + "/adir");
  std::ofstream(dir + "/empty.py") << "\n   \n";
  const std::string prog = kGolden + "while_else.py";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir + "/adir", "adir: is a directory, not a file"},
      {dir + "/empty.py", "empty.py: empty file"},
      {prog + " --compare " + dir + "/adir", "adir: is a directory, not a file"},
      {prog + " --compare " + prog + " --boundaries", "--compare and --boundaries conflict"},
      {prog + " --compare " + prog + " --function find", "--compare and --function conflict"},
      {prog + " --statements", "--statements needs --boundaries"},
      {prog + " --threshold 0.5", "--threshold needs --compare REF"},
      {prog + " --entry-point f", "--entry-point needs --extract"},
  };
  for (const auto& [args, needle] : cases) {
    ToolRun r = Tool(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("egca-cfg: ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << args << "\n" << r.out;
  }
}

// C++ programs: Clang CFGs in the same dump (tests/cpp/golden, checked there), I_cmp,
// a program clang rejects (exit 1), Python-only options (exit 2).
const std::string kCppGolden = std::string(EGCA_SOURCE_DIR) + "/tests/cpp/golden/";

TEST(EgcaCfgTool, CppDumpCompareAndErrors) {
  ToolRun r = Tool(kCppGolden + "cfg_loops.cpp");
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream expected(kCppGolden + "cfg_loops.dump");
  std::string want((std::istreambuf_iterator<char>(expected)), std::istreambuf_iterator<char>());
  EXPECT_EQ(r.out, want);
  ToolRun j = Tool(kCppGolden + "cfg_loops.cpp --function count_pairs --json");
  ASSERT_EQ(j.code, 0) << j.out;
  nlohmann::json doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["language"], "cpp");
  EXPECT_EQ(doc["scopes"][0]["qualified_name"], "count_pairs");
  EXPECT_EQ(doc["scopes"][0]["blocks"][2]["terminator"], "for");
  ToolRun same = Tool(kCppGolden + "cfg_loops.cpp --compare " + kCppGolden + "cfg_loops.cpp");
  ASSERT_EQ(same.code, 0) << same.out;
  EXPECT_EQ(same.out.rfind("similarity 1.0000 threshold 0.2500 I_cmp 1", 0), 0u) << same.out;
  // No extension: --lang cpp.
  std::string plain = testing::TempDir() + "/egca_cfg_prog";
  std::ofstream(plain) << "int f( {\n";
  ToolRun bad = Tool("--lang cpp " + plain);
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("does not parse"), std::string::npos) << bad.out;
  ToolRun extract = Tool(kCppGolden + "cfg_loops.cpp --extract");
  EXPECT_EQ(extract.code, 2) << extract.out;
  EXPECT_NE(extract.out.find("--extract is Python-only"), std::string::npos) << extract.out;
}

}  // namespace
