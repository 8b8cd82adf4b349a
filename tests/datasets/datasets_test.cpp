// Problem loaders on the real data sets (exact counts and field-level checks on specific
// records), on the APPS export fixtures built from the CodeRL problems, and on a fixture of
// broken records where every bad record must be reported by line and every good one kept.
#include "egca/datasets/datasets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/scratch_dir.h"

namespace egca::datasets {
namespace {

using tracer::TestKind;

std::string Data(const std::string& relative) {
  return std::string(EGCA_DATA_DIR) + "/" + relative;
}
std::string Fixture(const std::string& name) {
  return std::string(EGCA_SOURCE_DIR) + "/tests/fixtures/batch/data/" + name;
}

std::vector<ProblemRecord> Load(const std::string& path, LoadReport* report,
                                DatasetOptions options = {}) {
  StatusOr<std::vector<ProblemRecord>> problems = LoadProblems(path, options, report);
  EXPECT_TRUE(problems.ok()) << problems.status().ToString();
  return problems.ok() ? *problems : std::vector<ProblemRecord>{};
}

const ProblemRecord* Find(const std::vector<ProblemRecord>& problems, const std::string& id) {
  for (const ProblemRecord& p : problems) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

std::string BadLines(const LoadReport& report) {
  std::string out;
  for (const BadRecord& b : report.bad) out += b.ToString() + "\n";
  return out;
}

TEST(DatasetFormat, NamesRoundTrip) {
  for (const std::string& name : DatasetFormatNames()) {
    StatusOr<DatasetFormat> f = ParseDatasetFormat(name);
    ASSERT_TRUE(f.ok()) << name;
    EXPECT_EQ(DatasetFormatName(*f), name);
  }
  EXPECT_EQ(DatasetFormatNames().size(), 12u);  // + humaneval_cpp, mbxp_cpp, mdeval_cpp
  StatusOr<DatasetFormat> bad = ParseDatasetFormat("humaneva");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("\"humaneva\""), std::string::npos);
  EXPECT_NE(bad.status().message().find("mapcoder_apps"), std::string::npos);
}

TEST(DatasetFormat, DetectsEveryRealFile) {
  const std::map<std::string, DatasetFormat> files = {
      {"humaneval/HumanEval.jsonl.gz", DatasetFormat::kHumanEval},
      {"mbpp/mbpp.jsonl", DatasetFormat::kMbpp},
      {"mbpp/sanitized-mbpp.json", DatasetFormat::kMbppSanitized},
      {"mbpp/MBPP_ET.jsonl.gz", DatasetFormat::kMbppEt},
      {"apps/coderl_train", DatasetFormat::kAppsDir},
      {"apps/mapcoder_selected150.jsonl", DatasetFormat::kMapCoderApps},
      {"apps/teamcoder_selected300.jsonl", DatasetFormat::kMapCoderApps},
  };
  for (const auto& [file, format] : files) {
    StatusOr<DatasetFormat> got = DetectDatasetFormat(Data(file));
    ASSERT_TRUE(got.ok()) << file << ": " << got.status().ToString();
    EXPECT_EQ(*got, format) << file << " detected as " << DatasetFormatName(*got);
  }
  StatusOr<DatasetFormat> cp = DetectDatasetFormat(Fixture("codeparrot_apps.jsonl"));
  ASSERT_TRUE(cp.ok());
  EXPECT_EQ(*cp, DatasetFormat::kCodeparrotApps);
  StatusOr<DatasetFormat> plus = DetectDatasetFormat(Fixture("apps_plus.jsonl"));
  ASSERT_TRUE(plus.ok());
  EXPECT_EQ(*plus, DatasetFormat::kAppsPlus);
}

TEST(DatasetFormat, UndetectableAndUnreadableAreOneLineErrors) {
  testing::ScratchDir dir("egca_datasets_detect");
  std::string odd = dir.Write("odd.jsonl", "{\"foo\": 1, \"bar\": 2}\n");
  LoadReport report;
  StatusOr<std::vector<ProblemRecord>> r = LoadProblems(odd, {}, &report);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find(odd), 0u) << r.status().message();
  EXPECT_NE(r.status().message().find("bar, foo"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);

  StatusOr<std::vector<ProblemRecord>> missing =
      LoadProblems(dir.path().string() + "/nope.jsonl", {}, &report);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope.jsonl"), std::string::npos);

  // A directory that is not an APPS layout.
  StatusOr<std::vector<ProblemRecord>> empty_dir = LoadProblems(dir.path().string(), {}, &report);
  ASSERT_FALSE(empty_dir.ok());
  EXPECT_NE(empty_dir.status().message().find(dir.path().string()), std::string::npos);
}

TEST(HumanEvalLoader, AllProblemsWithCheckTests) {
  LoadReport report;
  std::vector<ProblemRecord> problems = Load(Data("humaneval/HumanEval.jsonl.gz"), &report);
  EXPECT_EQ(problems.size(), 164u);
  EXPECT_EQ(report.records, 164);
  EXPECT_EQ(report.loaded, 164);
  EXPECT_TRUE(report.bad.empty()) << BadLines(report);
  const ProblemRecord& p = problems.front();
  EXPECT_EQ(p.id, "HumanEval/0");
  EXPECT_EQ(p.dataset, "humaneval");
  EXPECT_EQ(p.entry_point, "has_close_elements");
  EXPECT_EQ(p.prompt.rfind("from typing import List\n\n\ndef has_close_elements(", 0), 0u);
  ASSERT_EQ(p.references.size(), 1u);
  EXPECT_EQ(p.references[0].substr(0, p.prompt.size()), p.prompt);
  EXPECT_NE(p.references[0].find("for idx, elem in enumerate(numbers):"), std::string::npos);
  ASSERT_EQ(p.tests.size(), 1u);
  EXPECT_EQ(p.tests[0].kind, TestKind::kAssert);
  EXPECT_EQ(p.tests[0].entry_point, "has_close_elements");
  EXPECT_NE(p.tests[0].test_code.find("def check(candidate):"), std::string::npos);
  EXPECT_EQ(p.origin, Data("humaneval/HumanEval.jsonl.gz") + ":1");
  EXPECT_FALSE(p.apps_conventions);
  EXPECT_EQ(problems.back().id, "HumanEval/163");
}

TEST(MbppLoader, PlainWithSetupCodeAndEntryPoints) {
  LoadReport report;
  std::vector<ProblemRecord> problems = Load(Data("mbpp/mbpp.jsonl"), &report);
  EXPECT_EQ(problems.size(), 974u);
  EXPECT_TRUE(report.bad.empty()) << BadLines(report);
  const ProblemRecord* p1 = Find(problems, "mbpp/1");
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(p1->dataset, "mbpp");
  EXPECT_EQ(p1->entry_point, "min_cost");
  ASSERT_EQ(p1->tests.size(), 3u);
  EXPECT_EQ(p1->tests[0].kind, TestKind::kAssert);
  EXPECT_EQ(p1->tests[0].test_code,
            "assert min_cost([[1, 2, 3], [4, 8, 2], [1, 5, 3]], 2, 2) == 8");
  // Problem 367 builds its fixtures in test_setup_code from the solution's own class; the
  // entry point is the function the asserts call, not the first def (Node's methods,
  // get_height).
  const ProblemRecord* p367 = Find(problems, "mbpp/367");
  ASSERT_NE(p367, nullptr);
  EXPECT_EQ(p367->entry_point, "is_tree_balanced");
  ASSERT_EQ(p367->tests.size(), 3u);
  EXPECT_EQ(p367->tests[2].setup_code.rfind("root = Node(1)", 0), 0u);
  int with_entry = 0;
  for (const ProblemRecord& p : problems) with_entry += !p.entry_point.empty();
  EXPECT_GE(with_entry, 970) << "entry point derivation fails too often";

  DatasetOptions challenge;
  challenge.mbpp_challenge_tests = true;
  LoadReport report2;
  std::vector<ProblemRecord> with_challenge = Load(Data("mbpp/mbpp.jsonl"), &report2, challenge);
  size_t tests = 0, tests_challenge = 0;
  for (const ProblemRecord& p : problems) tests += p.tests.size();
  for (const ProblemRecord& p : with_challenge) tests_challenge += p.tests.size();
  EXPECT_GT(tests_challenge, tests);
}

TEST(MbppLoader, SanitizedPutsTestImportsFirst) {
  LoadReport report;
  std::vector<ProblemRecord> problems = Load(Data("mbpp/sanitized-mbpp.json"), &report);
  EXPECT_EQ(problems.size(), 427u);
  EXPECT_EQ(report.records, 427);
  EXPECT_TRUE(report.bad.empty()) << BadLines(report);
  const ProblemRecord* p = Find(problems, "mbpp/82");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->dataset, "mbpp_sanitized");
  EXPECT_EQ(p->entry_point, "volume_sphere");
  EXPECT_EQ(p->prompt, "Write a function to find the volume of a sphere.");
  ASSERT_FALSE(p->tests.empty());
  EXPECT_EQ(p->tests[0].setup_code, "import math\n");
  EXPECT_EQ(p->tests[0].test_code.rfind("assert math.isclose(volume_sphere(10)", 0), 0u);
  EXPECT_EQ(p->origin.find(Data("mbpp/sanitized-mbpp.json") + "["), 0u);
  // similar_elements is called inside set(...): still found.
  const ProblemRecord* p2 = Find(problems, "mbpp/2");
  ASSERT_NE(p2, nullptr);
  EXPECT_EQ(p2->entry_point, "similar_elements");
}

TEST(MbppLoader, EtHasExtendedTests) {
  LoadReport report;
  std::vector<ProblemRecord> problems = Load(Data("mbpp/MBPP_ET.jsonl.gz"), &report);
  EXPECT_EQ(problems.size(), 397u);
  EXPECT_TRUE(report.bad.empty()) << BadLines(report);
  const ProblemRecord* p = Find(problems, "mbpp/3");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->dataset, "mbpp_et");
  EXPECT_EQ(p->entry_point, "is_not_prime");
  EXPECT_EQ(p->tests.size(), 102u);
  EXPECT_EQ(p->tests[0].test_code, "assert is_not_prime(2) == False");
}

TEST(AppsLoaders, CodeRlFolders) {
  LoadReport report;
  std::vector<ProblemRecord> problems = Load(Data("apps/coderl_train"), &report);
  ASSERT_EQ(problems.size(), 5u);
  EXPECT_EQ(report.records, 5);
  EXPECT_TRUE(report.bad.empty()) << BadLines(report);
  std::vector<std::string> ids;
  for (const ProblemRecord& p : problems) ids.push_back(p.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"apps/1", "apps/111", "apps/2287", "apps/2404",
                                           "apps/4184"}));
  const ProblemRecord& stdin_problem = problems[0];
  EXPECT_EQ(stdin_problem.difficulty, "interview");
  EXPECT_EQ(stdin_problem.references.size(), 24u);
  EXPECT_TRUE(stdin_problem.apps_conventions);
  EXPECT_TRUE(stdin_problem.starter_code.empty());
  ASSERT_EQ(stdin_problem.tests.size(), 1u);
  EXPECT_EQ(stdin_problem.tests[0].kind, TestKind::kStdio);
  EXPECT_EQ(stdin_problem.prompt.rfind("Mikhail walks on a Cartesian plane.", 0), 0u);
  const ProblemRecord* call = Find(problems, "apps/2404");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->entry_point, "findKthPositive");
  EXPECT_EQ(call->difficulty, "introductory");
  EXPECT_EQ(call->references.size(), 58u);
  EXPECT_EQ(call->starter_code.rfind("class Solution:", 0), 0u);
  ASSERT_FALSE(call->tests.empty());
  EXPECT_EQ(call->tests[0].kind, TestKind::kCall);
  EXPECT_EQ(call->tests[0].function, "findKthPositive");
  EXPECT_EQ(call->origin, Data("apps/coderl_train") + "/2404");
}

TEST(AppsLoaders, CodeparrotExportMatchesTheFolders) {
  LoadReport folders_report, report;
  std::vector<ProblemRecord> folders = Load(Data("apps/coderl_train"), &folders_report);
  std::vector<ProblemRecord> problems = Load(Fixture("codeparrot_apps.jsonl"), &report);
  ASSERT_EQ(problems.size(), 5u);
  EXPECT_TRUE(report.bad.empty()) << BadLines(report);
  for (size_t i = 0; i < problems.size(); ++i) {
    // Same problem, same id whichever shape it came in (the fixture keeps 3 references and
    // 4 tests of each).
    EXPECT_EQ(problems[i].id, folders[i].id);
    EXPECT_EQ(problems[i].dataset, "codeparrot_apps");
    EXPECT_EQ(problems[i].prompt, folders[i].prompt);
    EXPECT_EQ(problems[i].difficulty, folders[i].difficulty);
    EXPECT_EQ(problems[i].entry_point, folders[i].entry_point);
    EXPECT_EQ(problems[i].starter_code, folders[i].starter_code);
    ASSERT_EQ(problems[i].references.size(),
              std::min<size_t>(3, folders[i].references.size()));
    EXPECT_EQ(problems[i].references[0], folders[i].references[0]);
    ASSERT_EQ(problems[i].tests.size(), std::min<size_t>(4, folders[i].tests.size()));
    EXPECT_EQ(problems[i].tests[0].stdin_data, folders[i].tests[0].stdin_data);
    EXPECT_EQ(problems[i].tests[0].args_json, folders[i].tests[0].args_json);
    EXPECT_EQ(problems[i].tests[0].expected_json, folders[i].tests[0].expected_json);
  }
}

TEST(AppsLoaders, AppsPlusDefaultFieldNames) {
  LoadReport report;
  DatasetOptions options;
  options.format = DatasetFormat::kAppsPlus;
  std::vector<ProblemRecord> problems = Load(Fixture("apps_plus.jsonl"), &report, options);
  ASSERT_EQ(problems.size(), 5u);
  EXPECT_TRUE(report.bad.empty()) << BadLines(report);
  EXPECT_EQ(problems[0].id, "apps_plus/1");
  EXPECT_EQ(problems[0].dataset, "apps_plus");
  EXPECT_EQ(problems[0].references.size(), 3u);
  const ProblemRecord* call = Find(problems, "apps_plus/4184");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->entry_point, "is_prime");
  ASSERT_EQ(call->tests.size(), 4u);
  EXPECT_EQ(call->tests[0].kind, TestKind::kCall);
  EXPECT_EQ(call->tests[0].function, "is_prime");
}

TEST(AppsLoaders, AppsPlusMappedAndNestedFields) {
  DatasetOptions options;
  options.format = DatasetFormat::kAppsPlus;
  for (const char* assignment :
       {"id=id", "description=prompt", "solution=canonical_solution",
        "inputs=test_case.inputs", "outputs=test_case.outputs", "difficulty=level"}) {
    ASSERT_TRUE(SetAppsPlusField(&options.apps_plus, assignment).ok()) << assignment;
  }
  LoadReport report;
  std::vector<ProblemRecord> problems = Load(Fixture("apps_plus_renamed.jsonl"), &report, options);
  ASSERT_EQ(problems.size(), 5u);
  EXPECT_TRUE(report.bad.empty()) << BadLines(report);
  EXPECT_EQ(problems[0].id, "apps_plus/p0001");
  EXPECT_EQ(problems[0].difficulty, "interview");
  ASSERT_EQ(problems[0].references.size(), 1u);
  EXPECT_EQ(problems[0].tests[0].kind, TestKind::kStdio);
  EXPECT_EQ(problems[3].entry_point, "findKthPositive");
  EXPECT_EQ(problems[3].tests[0].kind, TestKind::kCall);

  // Without the mapping the renamed records are bad, each named by line.
  DatasetOptions plain;
  plain.format = DatasetFormat::kAppsPlus;
  LoadReport bad_report;
  EXPECT_TRUE(Load(Fixture("apps_plus_renamed.jsonl"), &bad_report, plain).empty());
  ASSERT_EQ(bad_report.bad.size(), 5u);
  EXPECT_EQ(bad_report.bad[0].line, 1);
  EXPECT_NE(bad_report.bad[0].message.find("\"problem_id\""), std::string::npos);

  AppsPlusFields fields;
  Status s = SetAppsPlusField(&fields, "tests=x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("\"tests\""), std::string::npos);
  EXPECT_FALSE(SetAppsPlusField(&fields, "id").ok());
}

TEST(AppsLoaders, MapCoderSelected150) {
  LoadReport report;
  std::vector<ProblemRecord> problems = Load(Data("apps/mapcoder_selected150.jsonl"), &report);
  // MapCoder sampled from train + train (its converter reads train.jsonl twice): 22 of the
  // 150 records repeat an earlier problem, identically. Each is reported and skipped.
  EXPECT_EQ(report.records, 150);
  EXPECT_EQ(problems.size(), 128u);
  ASSERT_EQ(report.bad.size(), 22u) << BadLines(report);
  for (const BadRecord& b : report.bad) {
    EXPECT_NE(b.message.find("duplicate id"), std::string::npos) << b.ToString();
    EXPECT_GT(b.line, 0);
  }
  int call_based = 0, stdio = 0;
  for (const ProblemRecord& p : problems) {
    EXPECT_EQ(p.dataset, "mapcoder_apps");
    EXPECT_TRUE(p.references.empty());
    EXPECT_TRUE(p.apps_conventions);
    if (p.starter_code.empty()) {
      ++stdio;
      EXPECT_TRUE(p.entry_point.empty()) << p.id;
    } else {
      ++call_based;
      EXPECT_FALSE(p.entry_point.empty()) << p.id;
    }
  }
  EXPECT_EQ(call_based, 79);
  EXPECT_EQ(stdio, 49);

  // Call-based problems are graded as MapCoder graded them: the arguments, one str() per
  // line, on stdin; the unwrapped value, as Python prints it, on stdout.
  const ProblemRecord* dice = Find(problems, "apps/3554");
  ASSERT_NE(dice, nullptr);
  EXPECT_EQ(dice->entry_point, "get_score");
  EXPECT_EQ(dice->difficulty, "introductory");
  ASSERT_FALSE(dice->tests.empty());
  EXPECT_EQ(dice->tests[0].kind, TestKind::kStdio);
  EXPECT_EQ(dice->tests[0].stdin_data, "[1]");
  EXPECT_EQ(dice->tests[0].expected_stdout, "100");
  const ProblemRecord* anagrams = nullptr;
  for (const ProblemRecord& p : problems) {
    if (p.entry_point == "anagrams") anagrams = &p;
  }
  ASSERT_NE(anagrams, nullptr);
  EXPECT_EQ(anagrams->tests[0].stdin_data, "abba\n['aabb', 'abcd', 'bbaa', 'dada']");
  EXPECT_EQ(anagrams->tests[0].expected_stdout, "['aabb', 'bbaa']");
  // A stdin/stdout problem keeps its expected text as is.
  const ProblemRecord* grid = nullptr;
  for (const ProblemRecord& p : problems) {
    if (!p.tests.empty() && p.tests[0].stdin_data == "1 1\n.\n") grid = &p;
  }
  ASSERT_NE(grid, nullptr);
  EXPECT_EQ(grid->tests[0].expected_stdout, "1\n");
}

TEST(AppsLoaders, MapCoderCallModeDecodesArguments) {
  DatasetOptions options;
  options.mapcoder_call_tests = MapCoderCallTests::kCall;
  LoadReport report;
  std::vector<ProblemRecord> problems =
      Load(Data("apps/mapcoder_selected150.jsonl"), &report, options);
  const ProblemRecord* dice = Find(problems, "apps/3554");
  ASSERT_NE(dice, nullptr);
  ASSERT_FALSE(dice->tests.empty());
  EXPECT_EQ(dice->tests[0].kind, TestKind::kCall);
  EXPECT_EQ(dice->tests[0].function, "get_score");
  EXPECT_EQ(dice->tests[0].args_json, "[[1]]");
  EXPECT_EQ(dice->tests[0].expected_json, "100");  // [100] unwrapped
  const ProblemRecord* anagrams = nullptr;
  for (const ProblemRecord& p : problems) {
    if (p.entry_point == "anagrams") anagrams = &p;
  }
  ASSERT_NE(anagrams, nullptr);
  EXPECT_EQ(anagrams->tests[0].args_json, R"(["abba",["aabb","abcd","bbaa","dada"]])");
  EXPECT_EQ(anagrams->tests[0].expected_json, R"(["aabb","bbaa"])");
  // One problem's inputs do not split into one line per parameter (apps/1613 has string
  // arguments spanning lines): reported twice, as it is one of the repeated records.
  // apps/1617 leaves its defaulted parameters out, which is fine.
  int line_mismatch = 0;
  for (const BadRecord& b : report.bad) {
    line_mismatch += b.message.find("input lines but") != std::string::npos;
  }
  EXPECT_EQ(line_mismatch, 2) << BadLines(report);
  EXPECT_EQ(problems.size(), 127u);
  const ProblemRecord* converter = Find(problems, "apps/1617");
  ASSERT_NE(converter, nullptr);
  EXPECT_EQ(converter->tests[0].args_json, "[13]");
  EXPECT_EQ(converter->tests[0].expected_json, "\"103\"");
}

TEST(AppsLoaders, MapCoderBigIntegersStayExact) {
  // apps/4268 test 8 returns 3608528850368400786036725 (beyond 64 bits): a double would
  // print 3.608528850368401e+24. Test 9 returns None.
  for (MapCoderCallTests mode : {MapCoderCallTests::kStdio, MapCoderCallTests::kCall}) {
    DatasetOptions options;
    options.mapcoder_call_tests = mode;
    LoadReport report;
    std::vector<ProblemRecord> problems =
        Load(Data("apps/mapcoder_selected150.jsonl"), &report, options);
    const ProblemRecord* p = Find(problems, "apps/4268");
    ASSERT_NE(p, nullptr);
    ASSERT_GE(p->tests.size(), 10u);
    if (mode == MapCoderCallTests::kStdio) {
      EXPECT_EQ(p->tests[8].stdin_data, "3608528850368400786036724");
      EXPECT_EQ(p->tests[8].expected_stdout, "3608528850368400786036725");
      EXPECT_EQ(p->tests[9].expected_stdout, "None");
    } else {
      EXPECT_EQ(p->tests[8].args_json, "[3608528850368400786036724]");
      EXPECT_EQ(p->tests[8].expected_json, "3608528850368400786036725");
      EXPECT_EQ(p->tests[9].expected_json, "null");
    }
  }
}

TEST(AppsLoaders, TeamCoderSelected300) {
  LoadReport report;
  std::vector<ProblemRecord> problems = Load(Data("apps/teamcoder_selected300.jsonl"), &report);
  EXPECT_EQ(report.records, 300);
  EXPECT_EQ(problems.size(), 296u);
  EXPECT_EQ(report.bad.size(), 4u) << BadLines(report);
  int call_based = 0;
  for (const ProblemRecord& p : problems) call_based += !p.starter_code.empty();
  EXPECT_EQ(call_based, 51);
}

TEST(BadRecords, EveryBadRecordReportedEveryGoodOneKept) {
  LoadReport report;
  const std::string path = Fixture("humaneval_bad_records.jsonl");
  DatasetOptions options;
  options.format = DatasetFormat::kHumanEval;
  std::vector<ProblemRecord> problems = Load(path, &report, options);
  std::vector<std::string> ids;
  for (const ProblemRecord& p : problems) ids.push_back(p.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"HumanEval/0", "HumanEval/2", "HumanEval/4"}));
  EXPECT_EQ(report.records, 10);  // the blank line 7 is not a record
  EXPECT_EQ(report.loaded, 3);
  // line -> what the message must say
  const std::vector<std::pair<int64_t, std::string>> expected = {
      {2, "not valid JSON"},
      {3, "missing field \"entry_point\""},
      {4, "field \"test\" must be a string"},
      {5, "has no tests"},
      {6, "not valid UTF-8"},
      {9, "duplicate id \"HumanEval/0\""},
      {10, "not a JSON object"},
  };
  ASSERT_EQ(report.bad.size(), expected.size()) << BadLines(report);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(report.bad[i].file, path);
    EXPECT_EQ(report.bad[i].line, expected[i].first) << report.bad[i].ToString();
    EXPECT_NE(report.bad[i].message.find(expected[i].second), std::string::npos)
        << report.bad[i].ToString();
  }
  EXPECT_EQ(report.bad[0].ToString().rfind(path + ":2: not valid JSON", 0), 0u);
  // U+2028 inside a record is text, not a line break.
  EXPECT_NE(problems[2].prompt.find("Deviation \u2028(U+2028 inside)"), std::string::npos);
  EXPECT_EQ(problems[2].origin, path + ":11");
}

TEST(BadRecords, AppsFolderWithBrokenFiles) {
  testing::ScratchDir dir("egca_datasets_apps_bad");
  std::filesystem::create_directories(dir.path() / "0007");
  std::filesystem::create_directories(dir.path() / "0008");
  std::filesystem::create_directories(dir.path() / "0009");
  dir.Write("0007/question.txt", "Add two numbers.");
  dir.Write("0007/input_output.json", R"({"inputs": ["1 2\n"], "outputs": ["3\n"]})");
  dir.Write("0007/solutions.json", R"(["a, b = map(int, input().split())\nprint(a + b)\n"])");
  dir.Write("0008/question.txt", "No tests here.");
  dir.Write("0009/question.txt", "Bad \xff byte.");
  dir.Write("0009/input_output.json", R"({"inputs": ["1\n"], "outputs": ["1\n"]})");
  LoadReport report;
  std::vector<ProblemRecord> problems = Load(dir.path().string(), &report);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].id, "apps/7");
  ASSERT_EQ(report.bad.size(), 2u) << BadLines(report);
  EXPECT_NE(report.bad[0].message.find("0008: no input_output.json"), std::string::npos);
  EXPECT_NE(report.bad[1].message.find("not valid UTF-8"), std::string::npos);
}

TEST(DatasetOptions, LimitAndIdPrefix) {
  DatasetOptions options;
  options.limit = 7;
  options.id_prefix = "mbpp-test/";
  LoadReport report;
  std::vector<ProblemRecord> problems = Load(Data("mbpp/mbpp.jsonl"), &report, options);
  ASSERT_EQ(problems.size(), 7u);
  EXPECT_EQ(report.records, 7);
  EXPECT_EQ(problems[0].id, "mbpp-test/1");
}

TEST(EntryPoint, FromAsserts) {
  EXPECT_EQ(EntryPointFromAsserts("def helper(x):\n  return x\ndef main_fn(a):\n  return helper(a)\n",
                                  {"assert main_fn(3) == 3"}),
            "main_fn");
  // A def whose name is a prefix of the called one, or a method call, does not count.
  EXPECT_EQ(EntryPointFromAsserts("def sum_(x):\n  pass\ndef sum_list(x):\n  pass\n",
                                  {"assert sum_list([1]) == 1", "assert x.sum_(1)"}),
            "sum_list");
  EXPECT_EQ(EntryPointFromAsserts("class A:\n  def f(self):\n    pass\n", {"assert A().f()"}), "");
  EXPECT_EQ(EntryPointFromAsserts("async def g(x):\n  pass\n", {"assert g (1)"}), "g");
}

}  // namespace
}  // namespace egca::datasets
