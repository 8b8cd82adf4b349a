// egca-eval and the evaluation library: visible tests, pass@k against the unbiased
// estimator computed by hand (n < k and c = 0 edge cases), Iter-k on a tiny model, and bad
// input (one line, exit 2).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/run_command.h"
#include "egca/core/files.h"
#include "egca/datasets/datasets.h"
#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/rl/evaluation.h"
#include "model_test_util.h"

namespace egca::trainer {
namespace {

namespace fs = std::filesystem;

const std::string kHumanEval = EGCA_DATA_DIR "/humaneval/HumanEval.jsonl.gz";
const std::string kEval = EGCA_BINARY_DIR "/tools/egca-eval/egca-eval";

std::vector<datasets::ProblemRecord> HumanEval(int64_t limit) {
  datasets::DatasetOptions o;
  o.limit = limit;
  datasets::LoadReport report;
  auto p = datasets::LoadProblems(kHumanEval, o, &report);
  EXPECT_TRUE(p.ok());
  return p.ok() ? *p : std::vector<datasets::ProblemRecord>{};
}

TEST(VisibleTests, HumanEvalDocstringExamplesBecomeAsserts) {
  const auto problems = HumanEval(3);
  const auto v0 = VisibleTests(problems[0]);  // has_close_elements: two examples
  ASSERT_EQ(v0.size(), 2u);
  EXPECT_EQ(v0[0].kind, tracer::TestKind::kAssert);
  EXPECT_EQ(v0[0].test_code, "assert (has_close_elements([1.0, 2.0, 3.0], 0.5)) == (False)\n");
  EXPECT_EQ(v0[1].test_code, "assert (has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3)) == (True)\n");
  const auto v1 = VisibleTests(problems[1]);  // separate_paren_groups: one example
  ASSERT_EQ(v1.size(), 1u);
  EXPECT_NE(v1[0].test_code.find("['()', '(())', '(()())']"), std::string::npos) << v1[0].test_code;
  // Not HumanEval-shaped: the first test.
  datasets::ProblemRecord mbpp;
  mbpp.tests = {tracer::TestCase::Asserts("assert f(1) == 2\n"), tracer::TestCase::Asserts("assert f(2) == 3\n")};
  const auto vm = VisibleTests(mbpp);
  ASSERT_EQ(vm.size(), 1u);
  EXPECT_EQ(vm[0].test_code, "assert f(1) == 2\n");
}

const std::string kCorrectBody =
    "    for i in range(len(numbers)):\n"
    "        for j in range(i + 1, len(numbers)):\n"
    "            if abs(numbers[i] - numbers[j]) < threshold:\n"
    "                return True\n"
    "    return False\n";
const std::string kWrongBody = "    return False\n";

// HumanEval/0: n = 5, c = 2; HumanEval/1: n = 3, c = 0.
//   pass@1 = (2/5 + 0) / 2 = 0.2
//   pass@2 = ((1 - C(3,2)/C(5,2)) + 0) / 2 = (1 - 3/10) / 2 = 0.35
//   pass@5: HumanEval/0 = 1 - C(3,5)/C(5,5) = 1; HumanEval/1 has n = 3 < 5: no overall value.
TEST(PassAtK, SamplesMatchTheEstimatorByHand) {
  GradeOptions go;
  go.progress = false;
  auto grader = Grader::Create(go);
  ASSERT_TRUE(grader.ok());
  const auto problems = HumanEval(2);
  std::vector<EvalSample> samples;
  for (int i = 0; i < 5; ++i) samples.push_back({"HumanEval/0", i < 2 ? kCorrectBody : kWrongBody, true});
  for (int i = 0; i < 3; ++i) samples.push_back({"HumanEval/1", "    return []\n", true});
  auto report = PassAtKOfSamples(**grader, problems, samples, {1, 2, 5});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->rows.size(), 2u);
  EXPECT_EQ(report->rows[0].n, 5);
  EXPECT_EQ(report->rows[0].c, 2);
  EXPECT_EQ(report->rows[1].c, 0);
  EXPECT_NEAR(report->overall.at(1), 0.2, 1e-12);
  EXPECT_NEAR(report->overall.at(2), 0.35, 1e-12);
  EXPECT_EQ(report->overall.count(5), 0u);
  EXPECT_NEAR(report->rows[0].pass_at_k.at(5), 1.0, 1e-12);
  EXPECT_NEAR(report->rows[1].pass_at_k.at(2), 0.0, 1e-12);
  EXPECT_EQ(report->rows[1].pass_at_k.count(5), 0u);
  const std::string md = report->ToMarkdown();
  EXPECT_NE(md.find("| pass@k | 20.00 | 35.00 | n < k |"), std::string::npos) << md;
  // A samples set matching no problem is an error.
  EXPECT_FALSE(PassAtKOfSamples(**grader, problems, {{"HumanEval/999", "x", false}}, {1}).ok());
}

TEST(EgcaEvalCli, SamplesFileAndIterKOnATinyModel) {
  testing::ScratchDir dir("egca_eval");
  {
    std::ofstream s(dir.file("samples.jsonl"));
    for (int i = 0; i < 4; ++i) {
      s << nlohmann::json{{"problem_id", "HumanEval/0"}, {"completion", i < 1 ? kCorrectBody : kWrongBody},
                          {"completion_is_body", true}}.dump()
        << "\n";
    }
  }
  auto r = egca::testing::RunCommand(kEval + " --problems " + kHumanEval + " --limit 2 --samples " +
                                     dir.file("samples.jsonl") + " --k 1,2 --json " + dir.file("s.json") + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(*ReadFile(dir.file("s.json")));
  EXPECT_NEAR(j["pass_at_k"]["overall"]["pass@1"].get<double>(), 0.25, 1e-12);
  EXPECT_NEAR(j["pass_at_k"]["overall"]["pass@2"].get<double>(), 0.5, 1e-12);  // 1 - C(3,2)/C(4,2)
  EXPECT_EQ(j["pass_at_k"]["problems"], 1);

  // Iter-3 on a tiny random model: every stage runs; a random model solves nothing.
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  auto it = egca::testing::RunCommand(kEval + " --problems " + kHumanEval + " --limit 2 --model " + model +
                                      " --n 2 --k 1,2 --iter 3 --runs 2 --max-new-tokens 8 --temperature 0.8 --json " +
                                      dir.file("it.json") + " --markdown " + dir.file("it.md") + " 2>&1");
  ASSERT_EQ(it.exit_code, 0) << it.out;
  auto ji = nlohmann::json::parse(*ReadFile(dir.file("it.json")));
  ASSERT_EQ(ji["iter_k"]["curve_per_run"].size(), 2u);
  EXPECT_EQ(ji["iter_k"]["curve_per_run"][0].size(), 3u);
  EXPECT_EQ(ji["iter_k"]["per_problem"].size(), 2u);
  for (const auto& a : ji["iter_k"]["mean_attempts_per_run"]) {
    EXPECT_GE(a.get<double>(), 1.0);
    EXPECT_LE(a.get<double>(), 3.0);
  }
  EXPECT_NE(ReadFile(dir.file("it.md"))->find("Iter-3"), std::string::npos);
}

// C++ problems (HumanEval-X) are graded by egca::cpp through the same Grader: one program
// that passes and three with the comparison reversed, n = 4, c = 1:
//   pass@1 = 1/4, pass@2 = 1 - C(3,2)/C(4,2) = 1/2.
TEST(EgcaEvalCli, CppSamplesAreGradedByClang) {
  testing::ScratchDir dir("egca_eval_cpp");
  const std::string head =
      "```cpp\n#include<vector>\n#include<math.h>\nusing namespace std;\n"
      "bool has_close_elements(vector<float> numbers, float threshold){\n"
      "    for (int i=0;i<numbers.size();i++)\n"
      "        for (int j=i+1;j<numbers.size();j++)\n";
  const std::string correct = head + "            if (abs(numbers[i]-numbers[j])<threshold) return true;\n"
                                     "    return false;\n}\n```\n";
  const std::string wrong = head + "            if (abs(numbers[i]-numbers[j])>threshold) return true;\n"
                                   "    return false;\n}\n```\n";
  {
    std::ofstream s(dir.file("samples.jsonl"));
    for (int i = 0; i < 4; ++i) {
      s << nlohmann::json{{"problem_id", "CPP/0"}, {"completion", i < 1 ? correct : wrong}}.dump() << "\n";
    }
  }
  auto r = egca::testing::RunCommand(kEval + " --problems " + EGCA_DATA_DIR "/cpp/humaneval_cpp.jsonl.gz" +
                                     " --limit 1 --timeout 20 --samples " + dir.file("samples.jsonl") +
                                     " --k 1,2 --json " + dir.file("s.json") + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(*ReadFile(dir.file("s.json")));
  EXPECT_NEAR(j["pass_at_k"]["overall"]["pass@1"].get<double>(), 0.25, 1e-12) << j.dump();
  EXPECT_NEAR(j["pass_at_k"]["overall"]["pass@2"].get<double>(), 0.5, 1e-12);
}

TEST(EgcaEvalCli, BadInputIsOneLineExit2) {
  testing::ScratchDir dir("egca_eval_bad");
  std::ofstream(dir.file("none.jsonl")) << R"({"problem_id": "HumanEval/999", "completion": "x"})" << "\n";
  const std::string p = " --problems " + kHumanEval + " --limit 2";
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {" --problems " + dir.file("nope.jsonl") + " --samples x", "nope.jsonl"},
      {p, "exactly one of --samples"},
      {p + " --samples " + dir.file("none.jsonl") + " --model " + dir.path(), "exactly one of --samples"},
      {p + " --samples " + dir.file("missing.jsonl"), "missing.jsonl"},
      {p + " --samples " + dir.file("none.jsonl"), "no sample matches"},
      {p + " --samples " + dir.file("none.jsonl") + " --iter 2", "--iter needs --model"},
      {p + " --model " + dir.path(), "config.json"},
      {p + " --samples " + dir.file("none.jsonl") + " --k 0", "--k 0"},
      {p + " --samples " + dir.file("none.jsonl") + " --feedback loud", "--feedback loud"},
      {p + " --samples " + dir.file("none.jsonl") + " --bogus", "--bogus"},
      {p + " --samples " + dir.file("none.jsonl") + " --source nowhere", "nowhere"},
      {p + " --samples " + dir.file("none.jsonl") + " --lang rust", "--lang rust"},
  };
  for (const Case& c : cases) {
    auto r = egca::testing::RunCommand(kEval + c.args + " --quiet 2>&1");
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << c.args << ": " << r.out;
  }
}

}  // namespace
}  // namespace egca::trainer
