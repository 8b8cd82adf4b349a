// C++ data sets: HumanEval-X C++, MBXP C++ (+ its samples), MDEVAL C++ bugs, from the real
// files in ../shared/data/cpp.
#include <gtest/gtest.h>

#include <string>

#include "egca/datasets/datasets.h"
#include "egca/datasets/samples.h"

namespace egca::datasets {
namespace {

std::string Data(const std::string& relative) {
  return std::string(EGCA_DATA_DIR) + "/cpp/" + relative;
}

TEST(CppDatasets, HumanEvalXLoadsEveryProblemWithAMainTest) {
  LoadReport report;
  auto format = DetectDatasetFormat(Data("humaneval_cpp.jsonl.gz"));
  ASSERT_TRUE(format.ok()) << format.status().ToString();
  EXPECT_EQ(*format, DatasetFormat::kHumanEvalCpp);
  auto problems = LoadProblems(Data("humaneval_cpp.jsonl.gz"), {}, &report);
  ASSERT_TRUE(problems.ok()) << problems.status().ToString();
  EXPECT_EQ(problems->size(), 164u);
  EXPECT_TRUE(report.bad.empty());
  const ProblemRecord& p = problems->front();
  EXPECT_EQ(p.id, "CPP/0");
  EXPECT_EQ(p.language, "cpp");
  EXPECT_EQ(p.entry_point, "has_close_elements");
  ASSERT_EQ(p.tests.size(), 1u);
  EXPECT_EQ(p.tests[0].kind, tracer::TestKind::kAssert);
  EXPECT_NE(p.tests[0].test_code.find("int main"), std::string::npos);
  ASSERT_EQ(p.references.size(), 1u);
  EXPECT_EQ(p.references[0].rfind("#include<stdio.h>", 0), 0u);
}

TEST(CppDatasets, MbxpKeepsTasksWithoutSolutionAsReferenceless) {
  LoadReport report;
  auto problems = LoadProblems(Data("mbcpp_release_v1.2.jsonl.gz"), {}, &report);
  ASSERT_TRUE(problems.ok()) << problems.status().ToString();
  EXPECT_EQ(problems->size(), 848u);
  size_t with_reference = 0;
  for (const ProblemRecord& p : *problems) {
    EXPECT_EQ(p.dataset, "mbxp_cpp");
    with_reference += p.references.empty() ? 0 : 1;
  }
  EXPECT_EQ(with_reference, 773u);
  EXPECT_EQ(problems->front().id, "MBCPP/1");
  EXPECT_EQ(problems->front().entry_point, "minCost");
}

TEST(CppDatasets, MbxpSamplesAreBodiesOfTheirProblem) {
  LoadReport problem_report, report;
  auto problems = LoadProblems(Data("mbcpp_release_v1.2.jsonl.gz"), {}, &problem_report);
  ASSERT_TRUE(problems.ok());
  auto samples = ConvertSamples(Data("mbcpp_samples.jsonl.gz"), SampleSource::kMbxp, *problems,
                                {}, &report);
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  EXPECT_EQ(samples->size(), 848u);
  EXPECT_EQ(report.unmatched, 0);
  const Sample& s = samples->front();
  EXPECT_TRUE(s.completion_is_body);
  EXPECT_EQ(s.model, "mbxp");
  const ProblemRecord* p = nullptr;
  for (const ProblemRecord& q : *problems) {
    if (q.id == s.problem_id) p = &q;
  }
  ASSERT_NE(p, nullptr);
  SampleProgram program = ProgramOf(s, *p);
  EXPECT_EQ(program.code, p->prompt + s.completion);
}

TEST(CppDatasets, MdevalBugsCarryTheirBuggyLines) {
  LoadReport report;
  auto bugs = LoadMdevalBugs(Data("mdeval_bug_CPP.jsonl"), &report);
  ASSERT_TRUE(bugs.ok()) << bugs.status().ToString();
  EXPECT_EQ(bugs->size(), 69u);
  EXPECT_TRUE(report.bad.empty());
  const BugRecord& b = bugs->front();
  EXPECT_EQ(b.problem.id, "mdeval/CPP/1");
  EXPECT_EQ(b.category, "Syntax");
  ASSERT_EQ(b.buggy_lines.size(), 1u);
  EXPECT_EQ(b.buggy_lines[0], 10);
  EXPECT_NE(b.buggy_code.find("# find the factorial"), std::string::npos);
  // The buggy line numbers index buggy_code.
  size_t pos = 0;
  for (int i = 1; i < b.buggy_lines[0]; ++i) pos = b.buggy_code.find('\n', pos) + 1;
  EXPECT_EQ(b.buggy_code.substr(pos, b.buggy_code.find('\n', pos) - pos), "    # find the factorial");
  auto format = DetectDatasetFormat(Data("mdeval_bug_CPP.jsonl"));
  ASSERT_TRUE(format.ok());
  EXPECT_EQ(*format, DatasetFormat::kMdevalCpp);
}

TEST(CppDatasets, BadMdevalLinesAreReportedWithFileAndLine) {
  const std::string path = std::string(EGCA_BINARY_DIR) + "/mdeval_bad.jsonl";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"question_id\": \"CPP/9\", \"canonical_solution\": \"int f(){return 1;}\", "
             "\"buggy_code\": \"int f(){return 2;}\", \"fragment_lines\": [\"x\"], \"test\": \"int main(){}\"}\n"
             "not json\n", f);
  std::fclose(f);
  LoadReport report;
  auto bugs = LoadMdevalBugs(path, &report);
  ASSERT_TRUE(bugs.ok());
  EXPECT_TRUE(bugs->empty());
  ASSERT_EQ(report.bad.size(), 2u);
  EXPECT_EQ(report.bad[0].line, 1);
  EXPECT_NE(report.bad[0].message.find("fragment_lines"), std::string::npos);
  EXPECT_EQ(report.bad[1].line, 2);
}

}  // namespace
}  // namespace egca::datasets
