// egca-cfg end to end: outputs and exit codes (0 ok, 1 does not parse, 2 bad input/usage).
#include <gtest/gtest.h>

#include "common/run_command.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

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

}  // namespace
