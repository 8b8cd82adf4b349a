// The loaders produce tests that actually grade: loaded references pass their loaded tests
// under the warm executor (a real slice of HumanEval, MBPP plain/sanitized/ET, CodeRL APPS
// and the codeparrot/APPS+ fixtures), a wrong program fails them, and samples MapCoder
// itself judged solved pass the tests loaded from its APPS file (stdin mode, as it graded).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "egca/datasets/datasets.h"
#include "egca/datasets/samples.h"
#include "egca/tracer/executor.h"

namespace egca::datasets {
namespace {

std::string Data(const std::string& relative) {
  return std::string(EGCA_DATA_DIR) + "/" + relative;
}
std::string Fixture(const std::string& name) {
  return std::string(EGCA_SOURCE_DIR) + "/tests/fixtures/batch/data/" + name;
}

std::vector<ProblemRecord> Load(const std::string& path, DatasetOptions options = {}) {
  LoadReport report;
  StatusOr<std::vector<ProblemRecord>> p = LoadProblems(path, options, &report);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : std::vector<ProblemRecord>{};
}

class Grading : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto created = tracer::Executor::Create({});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    executor_ = std::move(created).value().release();
  }
  static void TearDownTestSuite() {
    delete executor_;
    executor_ = nullptr;
  }

  // Runs `program` on every test of `problem`; returns how many passed (failures described).
  static int Passed(const std::string& program, const ProblemRecord& problem,
                    std::string* failures) {
    tracer::RunOptions options;
    options.limits.cpu_seconds = 10;
    options.limits.wall_seconds = 40;
    options.apps_import_header = problem.apps_conventions;
    StatusOr<tracer::ProgramResult> r = executor_->RunAll(program, problem.tests, options);
    EXPECT_TRUE(r.ok()) << problem.id << ": " << r.status().ToString();
    if (!r.ok()) return -1;
    for (size_t i = 0; i < r->tests.size(); ++i) {
      const sandbox::Verdict& v = r->tests[i].verdict;
      if (!v.passed() && failures->size() < 2000) {
        *failures += problem.id + " " + problem.tests[i].name + ": " +
                     sandbox::VerdictName(v.kind) + " " + v.error_type + " " + v.message + "\n";
      }
    }
    return r->passed;
  }

  // The first reference of each problem passes all of its tests.
  static void ExpectReferencesPass(const std::vector<ProblemRecord>& problems, size_t count) {
    ASSERT_GE(problems.size(), count);
    for (size_t i = 0; i < count; ++i) {
      const ProblemRecord& p = problems[i];
      ASSERT_FALSE(p.references.empty()) << p.id;
      ASSERT_FALSE(p.tests.empty()) << p.id;
      std::string failures;
      EXPECT_EQ(Passed(p.references[0], p, &failures), static_cast<int>(p.tests.size()))
          << failures;
    }
  }

  static tracer::Executor* executor_;
};

tracer::Executor* Grading::executor_ = nullptr;

TEST_F(Grading, HumanEvalReferencesPassAndAWrongBodyFails) {
  std::vector<ProblemRecord> problems = Load(Data("humaneval/HumanEval.jsonl.gz"));
  ExpectReferencesPass(problems, 10);
  std::string failures;
  EXPECT_EQ(Passed(problems[0].prompt + "    return False\n", problems[0], &failures), 0);
}

TEST_F(Grading, MbppReferencesPass) {
  std::vector<ProblemRecord> problems = Load(Data("mbpp/mbpp.jsonl"));
  ExpectReferencesPass(problems, 10);
  // Setup code building fixtures from the program's own class.
  for (const ProblemRecord& p : problems) {
    if (p.id == "mbpp/367") ExpectReferencesPass({p}, 1);
  }
}

TEST_F(Grading, MbppSanitizedTestImportsRunBeforeTheAsserts) {
  std::vector<ProblemRecord> problems = Load(Data("mbpp/sanitized-mbpp.json"));
  ExpectReferencesPass(problems, 10);
  // The asserts of mbpp/82 call math.isclose; a candidate that never imports math still
  // passes because test_imports run first.
  for (const ProblemRecord& p : problems) {
    if (p.id != "mbpp/82") continue;
    std::string failures;
    EXPECT_EQ(Passed("def volume_sphere(r):\n    return 4 / 3 * 3.141592653589793 * r ** 3\n", p,
                     &failures),
              static_cast<int>(p.tests.size()))
        << failures;
  }
}

TEST_F(Grading, MbppEtReferencesPassTheExtendedTests) {
  DatasetOptions options;
  options.limit = 3;
  ExpectReferencesPass(Load(Data("mbpp/MBPP_ET.jsonl.gz"), options), 3);
}

TEST_F(Grading, AppsReferencesPassInEveryShape) {
  std::vector<ProblemRecord> folders = Load(Data("apps/coderl_train"));
  ASSERT_EQ(folders.size(), 5u);
  // 0001 (stdin/stdout) and 2404 (call-based, class Solution), 4184 (call-based function).
  ExpectReferencesPass({folders[0], folders[3], folders[4]}, 3);
  ExpectReferencesPass(Load(Fixture("codeparrot_apps.jsonl")), 5);
  DatasetOptions plus;
  plus.format = DatasetFormat::kAppsPlus;
  ExpectReferencesPass(Load(Fixture("apps_plus.jsonl"), plus), 5);
}

TEST_F(Grading, MapCoderSolvedSamplesPassTheLoadedTests) {
  std::vector<ProblemRecord> problems = Load(Data("apps/mapcoder_selected150.jsonl"));
  ConvertOptions options;
  options.dataset = "APPS";
  options.run_filter = "GPT4-Turbo-Direct-APPS";
  LoadReport report;
  StatusOr<std::vector<Sample>> samples = ConvertSamples(
      Data("samples/mapcoder/final-results.tar.gz"), SampleSource::kMapCoder, problems, options,
      &report);
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_EQ(samples->size(), 150u);
  int call_based = 0, stdio = 0;
  for (const Sample& s : *samples) {
    if (s.reported_solved != 1) continue;
    const ProblemRecord* problem = nullptr;
    for (const ProblemRecord& p : problems) {
      if (p.id == s.problem_id) problem = &p;
    }
    ASSERT_NE(problem, nullptr) << s.problem_id;
    int& count = problem->starter_code.empty() ? stdio : call_based;
    if (count >= 4) continue;
    ++count;
    SampleProgram program = ProgramOf(s, *problem);
    std::string failures;
    EXPECT_EQ(Passed(program.code, *problem, &failures), static_cast<int>(problem->tests.size()))
        << s.origin << "\n" << failures;
  }
  EXPECT_EQ(call_based, 4);
  EXPECT_EQ(stdio, 4);
}

}  // namespace
}  // namespace egca::datasets
