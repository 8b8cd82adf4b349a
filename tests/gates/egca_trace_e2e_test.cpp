// egca-trace end to end: the paper's case study, a real HumanEval failure (a CodeT sample
// against the canonical solution), JSON / plain text / HTML output, exit codes.
#include <gtest/gtest.h>

#include "common/run_command.h"
#include "common/scratch_dir.h"
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "egca/core/files.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using RunOutput = egca::testing::CommandOutput;

std::string ToolPath() { return std::string(EGCA_BINARY_DIR) + "/tools/egca-trace/egca-trace"; }

RunOutput Invoke(const std::string& args, bool with_stderr = false) {
  return egca::testing::RunCommand(ToolPath() + " " + args +
                                   (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

class EgcaTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(ToolPath())) << ToolPath() << " is not built";
  }
  std::string Write(const std::string& name, const std::string& text) {
    return scratch_.Write(name, text);
  }
  static std::string Lis(const std::string& name) {
    auto src = egca::ReadFile(std::string(EGCA_SOURCE_DIR) + "/tests/tracer/golden/" + name);
    std::string s = src.ok() ? src.value() : "";
    return s.substr(0, s.find("\n\nresult = ")) + "\n";
  }
  egca::testing::ScratchDir scratch_{"egca_trace_tool"};
  const fs::path& dir_ = scratch_.path();
};

TEST_F(EgcaTrace, CaseStudyJson) {
  std::string cand = Write("cand.py", Lis("lis_buggy.py"));
  std::string ref = Write("ref.py", Lis("lis_correct.py"));
  RunOutput r =
      Invoke(cand + " " + ref +
             " --fn longest_increasing_subsequence --input '[[1, 3, 3, 5]]' --expect 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["mode"], "LOGIC");
  EXPECT_EQ(j["pass_fraction"], 0.0);
  const json& e = j["divergence"]["earliest"];
  EXPECT_EQ(e["kind"], "control");
  EXPECT_EQ(e["line"], 10);
  EXPECT_EQ(e["context"]["i"], "2");
  EXPECT_EQ(e["context"]["j"], "1");
  EXPECT_EQ(e["span"]["start_col"], 12);
  // The step table ends at the divergence.
  ASSERT_FALSE(j["divergence"]["steps"].empty());
  EXPECT_TRUE(j["divergence"]["steps"].back()["diverges"].get<bool>());
}

TEST_F(EgcaTrace, CaseStudyPlainTextWhenPiped) {
  std::string cand = Write("cand.py", Lis("lis_buggy.py"));
  std::string ref = Write("ref.py", Lis("lis_correct.py"));
  RunOutput r = Invoke(cand + " " + ref +
                       " --fn longest_increasing_subsequence --input '[[1, 3, 3, 5]]' --expect 3");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "ANSI codes in piped output";
  EXPECT_NE(r.out.find("mode LOGIC"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("> 10 |             if nums[i] >= nums[j]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("^^^^^^^^^^^^^^^^^^^^^^"), std::string::npos) << r.out;
  RunOutput colored =
      Invoke(cand + " " + ref +
             " --fn longest_increasing_subsequence --input '[[1, 3, 3, 5]]' --color always");
  EXPECT_NE(colored.out.find("\x1b["), std::string::npos);
}

// HumanEval/0 (has_close_elements): CodeT's CodeGen-16B sample 1 compares only adjacent
// elements; the canonical solution compares every pair.
TEST_F(EgcaTrace, RealHumanEvalSampleAgainstCanonical) {
  std::string data = EGCA_DATA_DIR;
  auto he = egca::ReadMaybeGzipFile(data + "/humaneval/HumanEval.jsonl.gz");
  auto ct = egca::ReadMaybeGzipFile(
      data + "/samples/codet/HumanEval_codegen16B_temp0.8_topp0.95_num100.jsonl.gz");
  ASSERT_TRUE(he.ok() && ct.ok());
  std::istringstream hs(he.value()), cs(ct.value());
  std::string hl, cl;
  std::getline(hs, hl);
  std::getline(cs, cl);
  json problem = json::parse(hl), samples = json::parse(cl);
  ASSERT_EQ(problem["entry_point"], "has_close_elements");
  std::string prompt = problem["prompt"];
  std::string cand = Write("cand.py", prompt + samples["samples"][1].get<std::string>());
  std::string ref = Write("ref.py", prompt + problem["canonical_solution"].get<std::string>());
  std::string test = Write("test.py", problem["test"]);
  std::string html = (dir_ / "page.html").string();
  RunOutput r = Invoke(cand + " " + ref + " --tests " + test +
                       " --entry-point has_close_elements --json --html " + html);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["mode"], "LOGIC");
  ASSERT_FALSE(j["divergence"]["earliest"].is_null()) << r.out;
  EXPECT_EQ(j["divergence"]["earliest"]["function"], "has_close_elements");
  // The candidate's only loop: `for i in range(len(numbers) - 1):`.
  EXPECT_EQ(j["divergence"]["earliest"]["line"], 12);
  auto page = egca::ReadFile(html);
  ASSERT_TRUE(page.ok());
  EXPECT_NE(page.value().find("<mark>for i in range(len(numbers) - 1):</mark>"), std::string::npos);
  EXPECT_NE(page.value().find("Aligned steps"), std::string::npos);
}

TEST_F(EgcaTrace, BadInputsExitWithTwo) {
  std::string ok = Write("ok.py", "def f(x):\n    return x\n");
  std::string broken = Write("broken.py", "def f(x)\n    return x\n");
  EXPECT_EQ(Invoke(ok).exit_code, 2);  // no reference
  EXPECT_EQ(Invoke(ok + " " + (dir_ / "missing.py").string() + " --fn f").exit_code, 2);
  EXPECT_EQ(Invoke(ok + " " + ok + " --fn f --input 'not json'").exit_code, 2);
  EXPECT_EQ(Invoke(ok + " " + ok).exit_code, 2);  // no tests
  RunOutput unknown = Invoke(ok + " " + ok + " --fn f --bogus", true);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.out, "egca-trace: The following argument was not expected: --bogus\n");
  RunOutput r = Invoke(ok + " " + broken + " --fn f --input '[1]'", true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("broken.py"), std::string::npos) << r.out;
  // A candidate that does not parse is data: SYNTAX, exit 0.
  RunOutput s = Invoke(broken + " " + ok + " --fn f --input '[1]' --json");
  EXPECT_EQ(s.exit_code, 0);
  EXPECT_EQ(json::parse(s.out)["mode"], "SYNTAX");
}

}  // namespace
