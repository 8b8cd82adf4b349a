// egca-batch run with C++ problems (HumanEval-X format, tests/fixtures/batch/
// humaneval_cpp2.jsonl: `add` and `sum_to`; cpp2x2.jsonl: two body samples each): the main
// batch path grades and routes them with egca::cpp, one record per sample: a correct body,
// a compile error (SYNTAX at clang's line), an off-by-one loop (LOGIC, localized on the
// `for` line of the program), a recursive body with a switch that passes but is not
// comparable to the iterative reference (CONSTRAINT, I_cmp on Clang CFGs below C++'s 0.25);
// `show` routes one again. A
// constraints file applies the C++ checkers.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/run_command.h"
#include "common/scratch_dir.h"
#include "egca/core/files.h"

namespace {

using json = nlohmann::json;

const std::string kTool = std::string(EGCA_BINARY_DIR) + "/tools/egca-batch/egca-batch";
const std::string kFixtures = std::string(EGCA_SOURCE_DIR) + "/tests/fixtures/batch/";

TEST(EgcaBatchCpp, RoutesCppProblemsOnTheMainPath) {
  egca::testing::ScratchDir dir("egca_batch_cpp");
  const std::string store = (dir.path() / "store").string();
  auto r = egca::testing::RunCommand(kTool + " run --problems " + kFixtures +
                                     "humaneval_cpp2.jsonl --samples " + kFixtures +
                                     "cpp2x2.jsonl --store " + store +
                                     " --workers 1 --progress never 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto text = egca::ReadFile(store + "/report.json");
  ASSERT_TRUE(text.ok());
  json summary = json::parse(text.value())["summary"];
  EXPECT_EQ(summary["samples"], 4) << summary.dump();
  std::map<std::string, json> by_mode;
  std::istringstream in(egca::ReadFile(store + "/results.jsonl").value());
  std::string line;
  while (std::getline(in, line)) {
    json rec = json::parse(line);
    if (rec["type"] == "sample") by_mode[rec["problem"].get<std::string>() + " " +
                                         rec["mode"].get<std::string>()] = rec;
  }
  ASSERT_EQ(by_mode.size(), 4u) << r.out;
  ASSERT_TRUE(by_mode.count("CPP/0 CORRECT"));
  ASSERT_TRUE(by_mode.count("CPP/0 SYNTAX"));
  ASSERT_TRUE(by_mode.count("CPP/1 LOGIC"));
  ASSERT_TRUE(by_mode.count("CPP/1 CONSTRAINT"));
  const json& syntax = by_mode["CPP/0 SYNTAX"];
  EXPECT_EQ(syntax["verdict"], "SYNTAX_ERROR (CompileError)");
  EXPECT_EQ(syntax["error"]["program"][2], 3);  // `return a +;` is line 3 of the program
  const json& logic = by_mode["CPP/1 LOGIC"];
  EXPECT_EQ(logic["localized"], true);
  EXPECT_EQ(logic["earliest"]["program"][2], 3);  // the `for` line
  EXPECT_EQ(logic["earliest"]["completion"][2], 2);
  EXPECT_EQ(logic["last"]["program"][2], 6);      // `return s;`
  const json& constraint = by_mode["CPP/1 CONSTRAINT"];
  EXPECT_EQ(constraint["i_cmp"], false);
  EXPECT_EQ(by_mode["CPP/0 CORRECT"]["similarity"], 1.0);

  // show: the LOGIC sample again, in the trace view.
  auto shown = egca::testing::RunCommand(kTool + " show " + store + " " +
                                         logic["key"].get<std::string>() + " --json 2>&1");
  ASSERT_EQ(shown.exit_code, 0) << shown.out;
  json view = json::parse(shown.out);
  EXPECT_EQ(view["mode"], "LOGIC");
  EXPECT_EQ(view["earliest_divergence"]["start_line"], 3);
  EXPECT_EQ(view["divergence"]["earliest"]["kind"], "control");
}

TEST(EgcaBatchCpp, ConstraintsFileAppliesCppCheckers) {
  egca::testing::ScratchDir dir("egca_batch_cpp_constraints");
  const std::string store = (dir.path() / "store").string();
  const std::string constraints = dir.Write("c.json", R"({"CPP/1": [{"kind": "max_loop_depth", "value": 0}]})");
  auto r = egca::testing::RunCommand(kTool + " run --problems " + kFixtures +
                                     "humaneval_cpp2.jsonl --samples " + kFixtures +
                                     "cpp2x2.jsonl --store " + store + " --constraints " +
                                     constraints + " --no-comparability --workers 1 "
                                     "--progress never 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream in(egca::ReadFile(store + "/results.jsonl").value());
  std::string line;
  int constraint = 0, correct = 0;
  while (std::getline(in, line)) {
    json rec = json::parse(line);
    if (rec["type"] != "sample" || rec["problem"] != "CPP/1") continue;
    // The loop violates max_loop_depth(0); the recursive body has no loop and passes.
    if (rec["mode"] == "CONSTRAINT") {
      ++constraint;
      EXPECT_EQ(rec["violations"][0]["constraint"], "max_loop_depth(0)") << rec.dump();
    }
    if (rec["mode"] == "CORRECT") ++correct;
  }
  EXPECT_EQ(constraint, 1);
  EXPECT_EQ(correct, 1);
}

}  // namespace
