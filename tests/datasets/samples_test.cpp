// Sample JSONL (read, write, bad records, a 10 MB completion), ProgramOf, and the converters
// on the real published sample files: CodeT (16,400 bodies, all matched), MapCoder (APPS
// ids matching the mapcoder_apps loader, the unparsable line reported), LDB and Reflexion
// (MBPP and MultiPL-E naming mapped to the MBPP loader's ids).
#include "egca/datasets/samples.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/scratch_dir.h"
#include "egca/datasets/datasets.h"

namespace egca::datasets {
namespace {

std::string Data(const std::string& relative) {
  return std::string(EGCA_DATA_DIR) + "/" + relative;
}
std::string Fixture(const std::string& name) {
  return std::string(EGCA_SOURCE_DIR) + "/tests/fixtures/batch/data/" + name;
}

std::string BadLines(const LoadReport& report, size_t max = 20) {
  std::string out;
  for (size_t i = 0; i < report.bad.size() && i < max; ++i) out += report.bad[i].ToString() + "\n";
  return out;
}

const std::vector<ProblemRecord>& Problems(const std::string& relative) {
  static std::map<std::string, std::vector<ProblemRecord>> cache;
  auto it = cache.find(relative);
  if (it != cache.end()) return it->second;
  LoadReport report;
  StatusOr<std::vector<ProblemRecord>> p = LoadProblems(Data(relative), {}, &report);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return cache[relative] = p.ok() ? *p : std::vector<ProblemRecord>{};
}

std::vector<Sample> Convert(const std::string& path, SampleSource source,
                            const std::vector<ProblemRecord>& problems,
                            const ConvertOptions& options, LoadReport* report) {
  StatusOr<std::vector<Sample>> s = ConvertSamples(path, source, problems, options, report);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : std::vector<Sample>{};
}

TEST(SampleJsonl, BadRecordsReportedGoodOnesKept) {
  const std::string path = Fixture("samples_bad_records.jsonl");
  LoadReport report;
  StatusOr<std::vector<Sample>> samples = LoadSamples(path, &report);
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_EQ(samples->size(), 3u);
  EXPECT_EQ(report.records, 8);
  EXPECT_EQ(report.loaded, 3);
  const Sample& body = (*samples)[0];
  EXPECT_EQ(body.problem_id, "HumanEval/0");
  EXPECT_EQ(body.completion, "    return False\n");
  EXPECT_TRUE(body.completion_is_body);
  EXPECT_EQ(body.model, "m1");
  EXPECT_EQ(body.sample_id, "a");
  EXPECT_EQ(body.reported_solved, -1);
  EXPECT_EQ(body.origin, path + ":1");
  EXPECT_FALSE((*samples)[1].completion_is_body);
  EXPECT_EQ((*samples)[1].reported_solved, 1);
  EXPECT_EQ((*samples)[2].completion, "print('\u2028')");
  EXPECT_EQ((*samples)[2].origin, path + ":8");
  const std::vector<std::pair<int64_t, std::string>> expected = {
      {2, "not valid JSON"},
      {3, "missing field \"completion\""},
      {4, "field \"completion_is_body\" must be a boolean"},
      {5, "not valid UTF-8"},
      {7, "field \"problem_id\" is empty"},
  };
  ASSERT_EQ(report.bad.size(), expected.size()) << BadLines(report);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(report.bad[i].file, path);
    EXPECT_EQ(report.bad[i].line, expected[i].first) << report.bad[i].ToString();
    EXPECT_NE(report.bad[i].message.find(expected[i].second), std::string::npos)
        << report.bad[i].ToString();
  }
}

TEST(SampleJsonl, TenMegabyteCompletionLoads) {
  testing::ScratchDir dir("egca_samples_big");
  std::vector<Sample> in(3);
  in[0].problem_id = "HumanEval/0";
  in[0].completion = "def f():\n    return 1\n";
  in[1].problem_id = "HumanEval/1";
  // 10 MiB of code-like text with quotes, backslashes and non-ASCII to escape.
  std::string big;
  while (big.size() < (10u << 20)) big += "x = \"a\\\\b\" + 'é'  # line\n";
  in[1].completion = big;
  in[1].model = "m";
  in[2].problem_id = "mbpp/11";
  in[2].completion = "ok";
  in[2].reported_solved = 0;
  in[2].completion_is_body = true;
  in[2].sample_id = "s2";
  const std::string path = (dir.path() / "big.jsonl").string();
  ASSERT_TRUE(WriteSamplesJsonl(path, in).ok());
  LoadReport report;
  StatusOr<std::vector<Sample>> out = LoadSamples(path, &report);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_TRUE(report.bad.empty()) << BadLines(report);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ((*out)[i].problem_id, in[i].problem_id);
    EXPECT_EQ((*out)[i].completion, in[i].completion);
    EXPECT_EQ((*out)[i].model, in[i].model);
    EXPECT_EQ((*out)[i].sample_id, in[i].sample_id);
    EXPECT_EQ((*out)[i].completion_is_body, in[i].completion_is_body);
    EXPECT_EQ((*out)[i].reported_solved, in[i].reported_solved);
    EXPECT_EQ((*out)[i].origin, path + ":" + std::to_string(i + 1));
  }
  EXPECT_EQ((*out)[1].completion.size(), big.size());
  // Optional fields left empty are not written.
  const std::string text = SamplesToJsonl({in[0]});
  EXPECT_EQ(text, "{\"completion\":\"def f():\\n    return 1\\n\",\"problem_id\":\"HumanEval/0\"}\n");
}

TEST(SampleJsonl, UnreadableFileIsAnError) {
  LoadReport report;
  StatusOr<std::vector<Sample>> s = LoadSamples("/nonexistent/samples.jsonl", &report);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("/nonexistent/samples.jsonl"), std::string::npos);
}

TEST(ProgramOf, BodySamplesFollowThePrompt) {
  ProblemRecord p;
  p.id = "HumanEval/2";
  p.prompt = "def truncate_number(number):\n    \"\"\"doc\"\"\"\n";
  p.entry_point = "truncate_number";
  Sample s;
  s.problem_id = p.id;
  s.completion = "    return number % 1.0\n";
  s.completion_is_body = true;
  SampleProgram prog = ProgramOf(s, p);
  EXPECT_TRUE(prog.from_body);
  EXPECT_STREQ(prog.KindName(), "body");
  EXPECT_EQ(prog.code, p.prompt + s.completion);
  EXPECT_EQ(prog.offset, -static_cast<int64_t>(p.prompt.size()));
  const int64_t ret = static_cast<int64_t>(prog.code.find("return"));
  EXPECT_EQ(prog.ToCompletionByte(ret), 4);  // "    return" in the completion
  EXPECT_EQ(prog.ToCompletionByte(0), -1);   // the prompt's bytes come from no token
}

TEST(ProgramOf, FencedCompletionPicksTheEntryPointBlock) {
  ProblemRecord p;
  p.entry_point = "add";
  Sample s;
  s.completion =
      "Here is a helper:\n```python\ndef helper():\n    pass\n```\nAnd the answer:\n"
      "```python\ndef add(a, b):\n    return a + b\n```\nDone.";
  SampleProgram prog = ProgramOf(s, p);
  EXPECT_FALSE(prog.from_body);
  EXPECT_STREQ(prog.KindName(), "fence");
  EXPECT_EQ(prog.code, "def add(a, b):\n    return a + b\n");
  EXPECT_EQ(s.completion.substr(static_cast<size_t>(prog.offset), prog.code.size()), prog.code);
  EXPECT_EQ(prog.ToCompletionByte(4), prog.offset + 4);
}

// Issue 16, point 3: a whole program runs after the prompt's context, as prompt +
// completion would: the imports and helpers of the prompt, never the entry point's stub.
const ProblemRecord& HumanEval(const std::string& id) {
  for (const ProblemRecord& p : Problems("humaneval/HumanEval.jsonl.gz")) {
    if (p.id == id) return p;
  }
  static ProblemRecord none;
  ADD_FAILURE() << id << " not found";
  return none;
}

TEST(ProgramOf, WholeProgramsGetThePromptsImportsAndHelpers) {
  const ProblemRecord& he0 = HumanEval("HumanEval/0");
  Sample s;
  s.completion =
      "```python\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
      "    return any(abs(a - b) < threshold for i, a in enumerate(numbers)\n"
      "               for b in numbers[i + 1:])\n```\n";
  SampleProgram prog = ProgramOf(s, he0);
  EXPECT_EQ(prog.code.rfind("from typing import List\n\n\n", 0), 0u) << prog.code;
  EXPECT_EQ(prog.code.find("Check if in given list"), std::string::npos) << "the stub is kept";
  EXPECT_EQ(prog.code.substr(prog.context_bytes), prog.extraction.code);
  EXPECT_EQ(prog.ToCompletionByte(0), -1);  // the context comes from no token
  const size_t def = prog.code.find("def has_close_elements");
  EXPECT_EQ(prog.ToCompletionByte(static_cast<int64_t>(def)),
            static_cast<int64_t>(s.completion.find("def has_close_elements")));

  // HumanEval/38: decode_cyclic calls the prompt's encode_cyclic.
  const ProblemRecord& he38 = HumanEval("HumanEval/38");
  s.completion = "def decode_cyclic(s: str):\n    return encode_cyclic(encode_cyclic(s))\n";
  prog = ProgramOf(s, he38);
  EXPECT_NE(prog.code.find("def encode_cyclic(s: str):"), std::string::npos) << prog.code;
  EXPECT_EQ(prog.code.find("takes as input string encoded with encode_cyclic"), std::string::npos)
      << prog.code;
  // A program that defines the helper itself keeps its own.
  s.completion = "def encode_cyclic(s):\n    return s\n\n\ndef decode_cyclic(s):\n    return s\n";
  prog = ProgramOf(s, he38);
  EXPECT_EQ(prog.code.find("def encode_cyclic(s: str):"), std::string::npos) << prog.code;
  EXPECT_EQ(prog.context_bytes, 0u);

  // A prompt that is prose (MBPP) gives no context.
  ProblemRecord mbpp;
  mbpp.prompt = "Write a function to add two numbers.";
  mbpp.entry_point = "add";
  mbpp.references = {"def add(a, b):\n    return a + b\n"};
  s.completion = "def add(a, b):\n    return a + b\n";
  EXPECT_EQ(ProgramOf(s, mbpp).code, s.completion);
}

// Issue 16, point 4: a completion with no code is an empty sample.
TEST(ProgramOf, EmptyCompletionsAreEmptySamples) {
  const ProblemRecord& he2 = HumanEval("HumanEval/2");
  Sample s;
  for (const char* completion : {"", "\n\n", "    # TODO\n", "```python\n```\n"}) {
    s.completion = completion;
    s.completion_is_body = false;
    EXPECT_TRUE(ProgramOf(s, he2).empty) << "program: " << completion;
    s.completion_is_body = true;
    EXPECT_TRUE(ProgramOf(s, he2).empty) << "body: " << completion;
  }
  s.completion = "    return number % 1.0\n";
  EXPECT_FALSE(ProgramOf(s, he2).empty);
}

// Issue 16, point 5: a Markdown fence glued to the end of a code line ends the code.
TEST(ProgramOf, FencesGluedToCodeAreStripped) {
  const ProblemRecord& he2 = HumanEval("HumanEval/2");
  Sample s;
  s.completion_is_body = true;
  s.completion = "    return number % 1.0```\n\nThis returns the decimal part.";
  EXPECT_EQ(ProgramOf(s, he2).code, he2.prompt + "    return number % 1.0");
  s.completion = "    return number % 1.0\n```\nExplanation.";
  EXPECT_EQ(ProgramOf(s, he2).code, he2.prompt + "    return number % 1.0\n");
  s.completion_is_body = false;
  s.completion = "```python\ndef truncate_number(number):\n    return number % 1.0```\nDone.";
  SampleProgram fenced = ProgramOf(s, he2);
  EXPECT_EQ(fenced.extraction.code, "def truncate_number(number):\n    return number % 1.0");
  s.completion = "def truncate_number(number):\n    return number % 1.0```\n\nIt works.";
  EXPECT_EQ(ProgramOf(s, he2).extraction.code,
            "def truncate_number(number):\n    return number % 1.0");
}

// Issue 16, point 8: human-eval's and evalplus's sample files, as people have them.
TEST(SampleJsonl, HumanEvalAndEvalPlusFiles) {
  testing::ScratchDir dir("samples_harness_formats");
  std::string path = dir.Write(
      "samples.jsonl",
      "{\"task_id\": \"HumanEval/2\", \"completion\": \"    return number % 1.0\\n\"}\n"
      "{\"task_id\": \"HumanEval/2\", \"completion\": \"def truncate_number(n):\\n    "
      "return n % 1.0\\n\"}\n"
      "{\"task_id\": \"HumanEval/2\", \"solution\": \"def truncate_number(n):\\n    return "
      "n % 1.0\\n\"}\n"
      "{\"task_id\": \"HumanEval/2\"}\n");
  LoadReport report;
  StatusOr<std::vector<Sample>> samples = LoadSamples(path, &report);
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_EQ(samples->size(), 3u) << BadLines(report);
  ASSERT_EQ(report.bad.size(), 1u);
  EXPECT_EQ(report.bad[0].line, 4);
  EXPECT_NE(report.bad[0].message.find("missing field \"completion\""), std::string::npos);
  const ProblemRecord& he2 = HumanEval("HumanEval/2");
  EXPECT_EQ((*samples)[0].problem_id, "HumanEval/2");
  EXPECT_TRUE((*samples)[0].detect_body);
  EXPECT_TRUE(ProgramOf((*samples)[0], he2).from_body);   // a body: after the prompt
  EXPECT_FALSE(ProgramOf((*samples)[1], he2).from_body);  // defines the entry point
  EXPECT_FALSE((*samples)[2].detect_body);                // evalplus: always a program
  EXPECT_FALSE(ProgramOf((*samples)[2], he2).from_body);
  // Written back, the decision stays with ProgramOf.
  std::string again = dir.Write("again.jsonl", SamplesToJsonl(*samples));
  LoadReport again_report;
  StatusOr<std::vector<Sample>> reread = LoadSamples(again, &again_report);
  ASSERT_TRUE(reread.ok());
  ASSERT_EQ(reread->size(), 3u);
  EXPECT_TRUE((*reread)[0].detect_body);
  EXPECT_FALSE((*reread)[2].detect_body);
}

TEST(NearestProblemId, SuggestsTheIdMeant) {
  const std::vector<std::string> ids = {"mbpp/2", "mbpp/11", "HumanEval/0", "HumanEval/38"};
  EXPECT_EQ(NearestProblemId("MBPP/2", ids), "mbpp/2");
  EXPECT_EQ(NearestProblemId("mbpp_11", ids), "mbpp/11");
  EXPECT_EQ(NearestProblemId("HumanEval/3", ids), "HumanEval/0");
  EXPECT_EQ(NearestProblemId("humaneval/38", ids), "HumanEval/38");
  EXPECT_EQ(NearestProblemId("apps/4001", ids), "");
}

TEST(SampleSource, NamesRoundTrip) {
  for (const std::string& name : SampleSourceNames()) {
    StatusOr<SampleSource> s = ParseSampleSource(name);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(SampleSourceName(*s), name);
  }
  EXPECT_FALSE(ParseSampleSource("codex").ok());
}

TEST(CodeTConverter, AllSixteenThousandFourHundredBodiesMatched) {
  const std::vector<ProblemRecord>& humaneval = Problems("humaneval/HumanEval.jsonl.gz");
  ASSERT_EQ(humaneval.size(), 164u);
  LoadReport report;
  std::vector<Sample> samples =
      Convert(Data("samples/codet/HumanEval_codegen16B_temp0.8_topp0.95_num100.jsonl.gz"),
              SampleSource::kCodeT, humaneval, {}, &report);
  EXPECT_EQ(samples.size(), 16400u);
  EXPECT_EQ(report.records, 164);
  EXPECT_EQ(report.loaded, 16400);
  EXPECT_EQ(report.unmatched, 0);
  EXPECT_TRUE(report.bad.empty()) << BadLines(report);
  std::map<std::string, int> per_problem;
  for (const Sample& s : samples) {
    ++per_problem[s.problem_id];
    EXPECT_TRUE(s.completion_is_body);
    EXPECT_EQ(s.model, "codegen16B");
  }
  // Every problem exactly once (CodeT's prompts lack the docstring examples, and /56 and
  // /61 share their signature: both still land on their own problem).
  EXPECT_EQ(per_problem.size(), 164u);
  for (const auto& [id, n] : per_problem) EXPECT_EQ(n, 100) << id;
  EXPECT_EQ(samples[0].problem_id, "HumanEval/0");
  EXPECT_EQ(samples[0].completion.rfind("    for i in range(len(numbers)):", 0), 0u);
  EXPECT_EQ(samples[0].sample_id, "HumanEval_codegen16B_temp0.8_topp0.95_num100.jsonl.gz:1#0");
}

TEST(MapCoderConverter, AppsRunsMatchTheMapCoderLoader) {
  const std::vector<ProblemRecord>& apps = Problems("apps/mapcoder_selected150.jsonl");
  ConvertOptions options;
  options.dataset = "APPS";
  LoadReport report;
  std::vector<Sample> samples = Convert(Data("samples/mapcoder/final-results.tar.gz"),
                                        SampleSource::kMapCoder, apps, options, &report);
  // ChatGPT and GPT4, 5 prompting methods each, 150 records per run.
  EXPECT_EQ(report.records, 1500);
  EXPECT_EQ(samples.size(), 1500u);
  EXPECT_EQ(report.unmatched, 0);
  EXPECT_TRUE(report.bad.empty()) << BadLines(report);
  std::set<std::string> models, ids;
  int solved = 0;
  for (const Sample& s : samples) {
    models.insert(s.model);
    ids.insert(s.problem_id);
    EXPECT_FALSE(s.completion_is_body);
    EXPECT_NE(s.reported_solved, -1);
    solved += s.reported_solved == 1;
  }
  EXPECT_EQ(models.size(), 10u);
  EXPECT_EQ(models.count("GPT4-Turbo-MapCoder-3-5-APPS"), 1u);
  EXPECT_EQ(models.count("ChatGPT-Direct-APPS"), 1u);
  EXPECT_EQ(ids.size(), 128u);  // the 150 records name 128 distinct problems
  EXPECT_GT(solved, 0);
  EXPECT_LT(solved, 1500);
}

TEST(MapCoderConverter, UnparsableLineReportedAndRunContinues) {
  const std::vector<ProblemRecord>& humaneval = Problems("humaneval/HumanEval.jsonl.gz");
  ConvertOptions options;
  options.dataset = "HumanEval";
  options.run_filter = "Ablation/";
  LoadReport report;
  const std::string tarball = Data("samples/mapcoder/final-results.tar.gz");
  std::vector<Sample> samples =
      Convert(tarball, SampleSource::kMapCoder, humaneval, options, &report);
  ASSERT_EQ(report.bad.size(), 1u) << BadLines(report);
  const BadRecord& bad = report.bad[0];
  EXPECT_EQ(bad.file,
            tarball + "/final-results/Ablation/HumanEval/ChatGPT-MapCoder-3-3-Human-Python3-0-1.jsonl");
  EXPECT_EQ(bad.line, 1);
  EXPECT_NE(bad.message.find("not valid JSON"), std::string::npos) << bad.ToString();
  // 13 ablation runs: 6 full (164 records, one of them missing its unparsable first line)
  // and 7 sampled (50).
  EXPECT_EQ(samples.size(), 6u * 164 - 1 + 7u * 50);
  EXPECT_EQ(report.unmatched, 0);
  // The line after the bad one is converted.
  bool found = false;
  for (const Sample& s : samples) {
    if (s.origin == bad.file + ":2") found = true;
  }
  EXPECT_TRUE(found);
}

TEST(LdbConverter, HumanEvalAndMbppRunsMatchTheLoaders) {
  std::vector<ProblemRecord> problems = Problems("humaneval/HumanEval.jsonl.gz");
  const std::vector<ProblemRecord>& mbpp = Problems("mbpp/mbpp.jsonl");
  problems.insert(problems.end(), mbpp.begin(), mbpp.end());
  LoadReport report;
  ConvertOptions options;
  options.run_filter = "results/ldb/";
  std::vector<Sample> samples = Convert(Data("samples/ldb/ldb.tar.gz"), SampleSource::kLdb,
                                        problems, options, &report);
  // 11 HumanEval runs (164) and 3 MBPP runs (500); the TransCoder folders hold no results.
  EXPECT_EQ(samples.size(), 11u * 164 + 3u * 500);
  EXPECT_EQ(report.unmatched, 0);
  EXPECT_TRUE(report.bad.empty()) << BadLines(report);
  std::map<std::string, int> per_model;
  for (const Sample& s : samples) {
    ++per_model[s.model];
    EXPECT_NE(s.reported_solved, -1) << s.origin;
  }
  EXPECT_EQ(per_model["ldb/codellama"], 164 + 500);
  EXPECT_EQ(per_model["ldb/reflexion/gpt-4o-2024-05-13"], 164);
  // MBPP/11 -> mbpp/11
  bool mbpp11 = false;
  for (const Sample& s : samples) mbpp11 |= s.problem_id == "mbpp/11";
  EXPECT_TRUE(mbpp11);

  // Every debugging iteration instead of the final program.
  ConvertOptions all = options;
  all.all_attempts = true;
  all.run_filter = "results/ldb/mbpp/codellama/";
  LoadReport all_report;
  std::vector<Sample> attempts = Convert(Data("samples/ldb/ldb.tar.gz"), SampleSource::kLdb,
                                         problems, all, &all_report);
  EXPECT_GT(attempts.size(), 500u);
  int final_verdicts = 0;
  for (const Sample& s : attempts) final_verdicts += s.reported_solved != -1;
  EXPECT_EQ(final_verdicts, 500);
}

TEST(LdbConverter, SeedBodiesAreFlaggedAsBodies) {
  const std::vector<ProblemRecord>& humaneval = Problems("humaneval/HumanEval.jsonl.gz");
  ConvertOptions options;
  options.run_filter = "input_data/humaneval/seed/reflexion/";
  LoadReport report;
  std::vector<Sample> samples = Convert(Data("samples/ldb/ldb.tar.gz"), SampleSource::kLdb,
                                        humaneval, options, &report);
  ASSERT_EQ(samples.size(), 164u);
  EXPECT_EQ(samples[0].model, "ldb-seed/reflexion");
  int bodies = 0;
  for (const Sample& s : samples) bodies += s.completion_is_body;
  EXPECT_GT(bodies, 150);  // these seeds are function bodies, like CodeT's
}

TEST(ReflexionConverter, MultiplEMbppNamesMapToMbppIds) {
  const std::vector<ProblemRecord>& mbpp = Problems("mbpp/mbpp.jsonl");
  ConvertOptions options;
  options.run_filter = "reflexion_mbpp_py/";
  LoadReport report;
  std::vector<Sample> samples =
      Convert(Data("samples/reflexion/programming_runs.tar.gz"), SampleSource::kReflexion, mbpp,
              options, &report);
  EXPECT_EQ(samples.size(), 397u);
  EXPECT_EQ(report.unmatched, 0);
  EXPECT_TRUE(report.bad.empty()) << BadLines(report);
  std::set<std::string> ids;
  for (const Sample& s : samples) ids.insert(s.problem_id);
  EXPECT_EQ(ids.count("mbpp/234"), 1u);  // "mbpp_234_volume_cube"
  EXPECT_EQ(samples[0].model, "reflexion/reflexion_mbpp_py");

  // LeetCode-hard runs have no loader: each such file is reported once, not per record.
  ConvertOptions leet;
  leet.run_filter = "simple_leetcode_python3_gpt4/";
  LoadReport leet_report;
  EXPECT_TRUE(Convert(Data("samples/reflexion/programming_runs.tar.gz"), SampleSource::kReflexion,
                      mbpp, leet, &leet_report)
                  .empty());
  EXPECT_EQ(leet_report.unmatched, 40);
  ASSERT_EQ(leet_report.bad.size(), 1u) << BadLines(leet_report);
  EXPECT_EQ(leet_report.bad[0].line, 0);
  EXPECT_NE(leet_report.bad[0].message.find("no record matches the given problems (40 records)"),
            std::string::npos);
}

TEST(ReflexionConverter, StringVerdictsAndSingleFilesAndFolders) {
  // Reflexion/LDB files written by other versions carry is_solved as "True"/"False" and
  // HumanEval ids in MultiPL-E naming; a single run file or a folder of them is accepted.
  const std::vector<ProblemRecord>& humaneval = Problems("humaneval/HumanEval.jsonl.gz");
  testing::ScratchDir dir("egca_samples_reflexion");
  std::filesystem::create_directories(dir.path() / "runs" / "a");
  const std::string file = dir.Write(
      "runs/a/run.jsonl",
      "{\"name\": \"HumanEval_23_strlen\", \"solution\": \"def strlen(string):\\n    return len(string)\\n\", \"is_solved\": \"True\"}\n"
      "{\"task_id\": \"HumanEval/23\", \"solution\": \"    return 0\\n\", \"is_solved\": \"False\"}\n"
      "{\"task_id\": \"HumanEval/999\", \"solution\": \"x\", \"is_solved\": \"maybe\"}\n");
  for (const std::string& path : {file, (dir.path() / "runs").string()}) {
    LoadReport report;
    std::vector<Sample> samples =
        Convert(path, SampleSource::kReflexion, humaneval, ConvertOptions{}, &report);
    ASSERT_EQ(samples.size(), 2u) << path;
    EXPECT_EQ(samples[0].problem_id, "HumanEval/23");
    EXPECT_EQ(samples[0].reported_solved, 1);
    EXPECT_FALSE(samples[0].completion_is_body);
    // The run's folder names the model; a lone file has only its stem.
    EXPECT_EQ(samples[0].model, path == file ? "reflexion/run" : "reflexion/a");
    EXPECT_EQ(samples[1].reported_solved, 0);
    EXPECT_TRUE(samples[1].completion_is_body);
    EXPECT_EQ(report.unmatched, 1);
    ASSERT_EQ(report.bad.size(), 1u) << BadLines(report);
    EXPECT_EQ(report.bad[0].line, 3);
    EXPECT_NE(report.bad[0].message.find("\"HumanEval/999\""), std::string::npos);
  }
  LoadReport report;
  StatusOr<std::vector<Sample>> missing = ConvertSamples(
      (dir.path() / "none.tar.gz").string(), SampleSource::kMapCoder, humaneval, {}, &report);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("none.tar.gz"), std::string::npos);
}

}  // namespace
}  // namespace egca::datasets
