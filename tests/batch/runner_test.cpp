// The runner on real HumanEval problems and CodeT samples (tests/fixtures/batch: 5 problems x
// 10 samples): every sample recorded once, resume writes nothing new, spans map into the
// completion, stand-in references (smallest passing key, checked against an independent
// grading), a reference that fails its own tests, and a problem with no passing candidate.
#include "egca/batch/runner.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/scratch_dir.h"
#include "egca/batch/records.h"

namespace egca::batch {
namespace {

using egca::testing::ScratchDir;

const std::string kFixtures = std::string(EGCA_SOURCE_DIR) + "/tests/fixtures/batch/";

struct Slice {
  std::vector<ProblemRecord> problems;
  std::vector<Sample> samples;
};

Slice Load() {
  Slice s;
  LoadReport pr, sr;
  DatasetOptions o;
  o.format = DatasetFormat::kHumanEval;
  auto problems = LoadProblems(kFixtures + "humaneval5.jsonl", o, &pr);
  EXPECT_TRUE(problems.ok()) << problems.status().ToString();
  auto samples = LoadSamples(kFixtures + "codet5x10.jsonl", &sr);
  EXPECT_TRUE(samples.ok()) << samples.status().ToString();
  s.problems = problems.value();
  s.samples = samples.value();
  EXPECT_EQ(s.problems.size(), 5u);
  EXPECT_EQ(s.samples.size(), 50u);
  return s;
}

RunConfig Config(const std::string& tag) {
  RunConfig c;
  c.problems_digest = tag;
  c.samples_digest = "fixture";
  c.constraints = "none";
  c.timeout_seconds = 1;
  c.egca_version = "test";
  return c;
}

RunnerOptions Options() {
  RunnerOptions o;
  o.workers = 2;
  o.router.run.limits.wall_seconds = 1;
  o.router.run.limits.cpu_seconds = 1;
  o.progress.enabled = false;
  return o;
}

std::vector<Sample> Of(const std::vector<Sample>& all, const std::string& problem) {
  std::vector<Sample> out;
  for (const auto& s : all) {
    if (s.problem_id == problem) out.push_back(s);
  }
  return out;
}

TEST(RelativePosition, ByHand) {
  // Generated lines 3..12 (10 lines): line 5 -> 2/10, line 12 -> 9/10, line 2 -> prompt.
  EXPECT_DOUBLE_EQ(*RelativePosition(5, 3, 12), 0.2);
  EXPECT_DOUBLE_EQ(*RelativePosition(12, 3, 12), 0.9);
  EXPECT_DOUBLE_EQ(*RelativePosition(3, 3, 12), 0.0);
  EXPECT_FALSE(RelativePosition(2, 3, 12).has_value());
  EXPECT_DOUBLE_EQ(*RelativePosition(4, 4, 4), 0.0);  // a one-line program
}

TEST(CountBoundaries, ByHand) {
  // Module: the def (1); f: `if x > 0:`, `return 1`, `return 2` (3 blocks) -> K = 4
  // (egca-cfg --boundaries lists the same four).
  EXPECT_EQ(CountBoundaries("def f(x):\n    if x > 0:\n        return 1\n    return 2\n"), 4);
  EXPECT_EQ(CountBoundaries("x = 1\ny = 2\n"), 1);  // one straight-line block
  EXPECT_FALSE(CountBoundaries("def f(:\n").has_value());
}

TEST(RunBatch, EverySampleOnceAndResumeWritesNothing) {
  Slice s = Load();
  ScratchDir dir("batch_runner_all");
  std::string d = (dir.path() / "store").string();
  RunStats first;
  {
    auto store = ResultStore::Open(d, Config("all"));
    ASSERT_TRUE(store.ok());
    auto stats = RunBatch(s.problems, s.samples, {}, store.value().get(), Options());
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    first = stats.value();
  }
  EXPECT_EQ(first.samples, 50);
  EXPECT_EQ(first.samples_written, 50);
  EXPECT_EQ(first.errors, 0);
  EXPECT_LE(first.programs_routed, 50);
  auto contents = ReadStore(d);
  ASSERT_TRUE(contents.ok());
  ASSERT_EQ(contents->samples.size(), 50u);
  EXPECT_EQ(contents->problems.size(), 5u);
  std::set<std::tuple<std::string, std::string, int32_t>> keys;
  int64_t localized_in_completion = 0, shared = 0;
  std::map<std::string, const ProblemRecord*> by_id;
  for (const auto& p : s.problems) by_id[p.id] = &p;
  for (const auto& r : contents->samples) {
    keys.emplace(r.problem, r.key, r.dup);
    EXPECT_EQ(r.reference, ReferenceKind::kGiven);
    shared += r.shared_result;
    if (r.mode == FailureMode::kSyntax) {
      EXPECT_FALSE(r.k.has_value());
    } else {
      EXPECT_TRUE(r.k.has_value() && *r.k > 0) << r.problem;
    }
    if (r.earliest && r.earliest->in_completion) {
      // The span's text is the same in the program (prompt + body) and in the completion.
      const Sample* sample = nullptr;
      for (const auto& x : s.samples) {
        if (x.problem_id == r.problem && SampleKey(x) == r.key) sample = &x;
      }
      ASSERT_NE(sample, nullptr);
      SampleProgram program = ProgramOf(*sample, *by_id[r.problem]);
      const SourceSpan& p = r.earliest->program;
      const SourceSpan& c = r.earliest->completion;
      EXPECT_EQ(program.code.substr(p.begin_byte, p.end_byte - p.begin_byte),
                sample->completion.substr(c.begin_byte, c.end_byte - c.begin_byte));
      EXPECT_EQ(p.begin.line - c.begin.line,
                static_cast<int32_t>(std::count(by_id[r.problem]->prompt.begin(),
                                                by_id[r.problem]->prompt.end(), '\n')));
      ++localized_in_completion;
      ASSERT_TRUE(r.relative_position.has_value());
      EXPECT_GE(*r.relative_position, 0.0);
      EXPECT_LT(*r.relative_position, 1.0);
    }
  }
  EXPECT_EQ(keys.size(), 50u);
  EXPECT_GT(localized_in_completion, 0);
  EXPECT_EQ(shared, 50 - first.programs_routed);

  auto again = ResultStore::Open(d, Config("all"));
  ASSERT_TRUE(again.ok());
  auto stats = RunBatch(s.problems, s.samples, {}, again.value().get(), Options());
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->samples_done_before, 50);
  EXPECT_EQ(stats->samples_written, 0);
  EXPECT_EQ(stats->programs_routed, 0);
}

TEST(RunBatch, StandInIsTheSmallestPassingKey) {
  Slice s = Load();
  ProblemRecord problem = s.problems[0];  // HumanEval/0
  problem.references.clear();
  std::vector<Sample> samples = Of(s.samples, problem.id);
  ASSERT_EQ(samples.size(), 10u);

  // Independent grading: the smallest key among samples that pass every test.
  auto executor = tracer::Executor::Create({});
  ASSERT_TRUE(executor.ok());
  tracer::RunOptions run;
  run.limits.wall_seconds = run.limits.cpu_seconds = 1;
  std::optional<std::string> expected;
  for (const auto& x : samples) {
    auto graded = (*executor)->RunAll(ProgramOf(x, problem).code, problem.tests, run);
    ASSERT_TRUE(graded.ok());
    if (graded->all_passed() && (!expected || SampleKey(x) < *expected)) expected = SampleKey(x);
  }
  ASSERT_TRUE(expected.has_value());

  ScratchDir dir("batch_runner_standin");
  std::string d = (dir.path() / "store").string();
  {
    auto store = ResultStore::Open(d, Config("standin"));
    ASSERT_TRUE(store.ok());
    auto stats = RunBatch({problem}, samples, {}, store.value().get(), Options());
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_EQ(stats->stand_ins, 1);
  }
  auto contents = ReadStore(d);
  ASSERT_TRUE(contents.ok());
  ASSERT_EQ(contents->problems.size(), 1u);
  EXPECT_EQ(contents->problems[0].reference, ReferenceKind::kStandIn);
  EXPECT_EQ(contents->problems[0].stand_in_key, *expected);
  EXPECT_FALSE(contents->problems[0].reference_failed);
  int stand_ins = 0;
  for (const auto& r : contents->samples) {
    EXPECT_EQ(r.reference, ReferenceKind::kStandIn);
    if (r.stand_in) {
      ++stand_ins;
      EXPECT_EQ(r.key, *expected);
      EXPECT_EQ(r.mode, FailureMode::kCorrect);
    }
  }
  EXPECT_EQ(stand_ins, 1);
}

TEST(RunBatch, FailingReferenceIsReportedAndReplaced) {
  Slice s = Load();
  ProblemRecord problem = s.problems[0];  // HumanEval/0: has_close_elements
  problem.references = {"def has_close_elements(numbers, threshold):\n    return False\n"};
  std::vector<Sample> samples = Of(s.samples, problem.id);
  ScratchDir dir("batch_runner_badref");
  std::string d = (dir.path() / "store").string();
  {
    auto store = ResultStore::Open(d, Config("badref"));
    ASSERT_TRUE(store.ok());
    auto stats = RunBatch({problem}, samples, {}, store.value().get(), Options());
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->failed_references, 1);
  }
  auto contents = ReadStore(d);
  ASSERT_TRUE(contents.ok());
  const ProblemResolution& p = contents->problems.at(0);
  EXPECT_TRUE(p.reference_failed);
  EXPECT_EQ(p.reference, ReferenceKind::kStandIn);
  EXPECT_NE(p.reference_failure.find("reference 1: test 1"), std::string::npos)
      << p.reference_failure;
}

TEST(RunBatch, NoPassingCandidateGradesWithoutReference) {
  Slice s = Load();
  ProblemRecord problem = s.problems[0];
  problem.references.clear();
  Sample wrong;
  wrong.problem_id = problem.id;
  wrong.completion = "    return False\n";
  wrong.completion_is_body = true;
  wrong.model = "m";
  wrong.origin = "hand:1";
  Sample broken = wrong;
  broken.completion = "    return (\n";
  broken.origin = "hand:2";
  ScratchDir dir("batch_runner_noref");
  std::string d = (dir.path() / "store").string();
  {
    auto store = ResultStore::Open(d, Config("noref"));
    ASSERT_TRUE(store.ok());
    auto stats = RunBatch({problem}, {wrong, broken}, {}, store.value().get(), Options());
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->no_reference, 1);
  }
  auto contents = ReadStore(d);
  ASSERT_TRUE(contents.ok());
  EXPECT_EQ(contents->problems.at(0).reference, ReferenceKind::kNone);
  ASSERT_EQ(contents->samples.size(), 2u);
  std::map<std::string, SampleRecord> by_origin;
  for (const auto& r : contents->samples) by_origin[r.origin] = r;
  EXPECT_EQ(by_origin["hand:1"].mode, FailureMode::kLogic);
  EXPECT_FALSE(by_origin["hand:1"].i_cmp.has_value());
  EXPECT_FALSE(by_origin["hand:1"].localized);
  EXPECT_EQ(by_origin["hand:2"].mode, FailureMode::kSyntax);
  EXPECT_TRUE(by_origin["hand:2"].error.has_value());
  EXPECT_EQ(by_origin["hand:2"].reference, ReferenceKind::kNone);
}

TEST(RunBatch, BadSamplesAreRecordedAndSkipped) {
  Slice s = Load();
  std::vector<Sample> samples = Of(s.samples, "HumanEval/0");
  samples.resize(2);
  Sample unknown = samples[0];
  unknown.problem_id = "HumanEval/999";
  unknown.origin = "x.jsonl:3";
  Sample huge = samples[0];
  huge.completion = std::string(2 << 20, '#');
  huge.origin = "x.jsonl:4";
  samples.push_back(unknown);
  samples.push_back(huge);
  ScratchDir dir("batch_runner_bad");
  std::string d = (dir.path() / "store").string();
  {
    auto store = ResultStore::Open(d, Config("bad"));
    ASSERT_TRUE(store.ok());
    auto stats =
        RunBatch(s.problems, samples, {{"p.jsonl", 7, "not JSON"}}, store.value().get(), Options());
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->bad_records, 3);
    EXPECT_EQ(stats->samples_written, 2);
  }
  auto contents = ReadStore(d);
  ASSERT_TRUE(contents.ok());
  std::set<std::string> bad;
  for (const auto& b : contents->bad) bad.insert(b.ToString());
  EXPECT_TRUE(bad.count("p.jsonl:7: not JSON"));
  // The unknown id comes with the known id it most likely means.
  bool unknown_reported = false;
  for (const auto& b : bad) {
    unknown_reported |=
        b.rfind("x.jsonl:3: sample for unknown problem \"HumanEval/999\" (did you mean ", 0) == 0;
  }
  EXPECT_TRUE(unknown_reported) << ::testing::PrintToString(bad);
  bool huge_reported = false;
  for (const auto& b : bad) huge_reported |= b.rfind("x.jsonl:4: program of", 0) == 0;
  EXPECT_TRUE(huge_reported);
}

}  // namespace
}  // namespace egca::batch
