// The result store: record round trip, line framing, torn-tail recovery, config refusal,
// the single-writer lock, and merging shard stores.
#include "egca/batch/store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/scratch_dir.h"
#include "egca/core/files.h"

namespace egca::batch {
namespace {

using egca::testing::ScratchDir;

SourceSpan Span(uint32_t b, uint32_t e, int l0, int c0, int l1, int c1) {
  SourceSpan s;
  s.begin_byte = b;
  s.end_byte = e;
  s.begin = {l0, c0};
  s.end = {l1, c1};
  return s;
}

// A sample key for tests: `n` as 64 hex digits (keys sort as the numbers do).
std::string TestKey(uint64_t n) { return fmt::format("{:064x}", n); }

SampleRecord Logic(const std::string& problem, uint64_t key) {
  SampleRecord r;
  r.problem = problem;
  r.key = TestKey(key);
  r.model = "codegen16B";
  r.difficulty = "interview";
  r.origin = "samples.jsonl:7";
  r.mode = FailureMode::kLogic;
  r.reason = "fails test 2 (WRONG_ANSWER)";
  r.verdict = "WRONG_ANSWER";
  r.passed = 1;
  r.tests = 3;
  r.r_hat = 1.0 / 3;
  r.i_cmp = true;
  r.similarity = 0.625;
  r.k = 12;
  r.k_executed = 7;
  r.k_star = 3;
  r.localized = true;
  r.divergence_kind = "value";
  r.earliest = LocatedSpan{Span(120, 135, 6, 8, 6, 23), true, Span(20, 35, 2, 8, 2, 23)};
  r.last = LocatedSpan{Span(10, 15, 1, 10, 1, 15), false, {}};
  r.relative_position = 0.25;
  r.violations.push_back({"max_loop_depth(2)", "loop depth 3 > 2", Span(1, 2, 1, 1, 1, 2)});
  r.violations.push_back({"requires_recursion", "no recursive call", std::nullopt});
  r.program_bytes = 300;
  r.program_lines = 14;
  r.grade_seconds = 0.0123;
  r.localize_seconds = 0.04;
  return r;
}

RunConfig Config() {
  RunConfig c;
  c.problems_path = "/data/HumanEval.jsonl.gz";
  c.problems_digest = "00000000000000aa";
  c.problems_format = "humaneval";
  c.samples_path = "/data/s.jsonl";
  c.samples_digest = "00000000000000bb";
  c.constraints = "none";
  c.timeout_seconds = 2;
  c.max_program_bytes = 1 << 20;
  c.egca_version = "0.1.0";
  c.egca_commit = "abc";
  return c;
}

TEST(SampleRecord, JsonRoundTrip) {
  SampleRecord r = Logic("HumanEval/3", 0x0123456789abcdefULL);
  auto back = ParseSampleRecord(SampleRecordJson(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(SampleRecordJson(back.value()), SampleRecordJson(r));
  EXPECT_TRUE(back->earliest->in_completion);
  EXPECT_EQ(back->earliest->completion.begin_byte, 20u);
  EXPECT_FALSE(back->last->in_completion);
  EXPECT_FALSE(back->violations[1].span.has_value());
  EXPECT_EQ(back->key, "0000000000000000000000000000000000000000000000000123456789abcdef");
}

TEST(SampleRecord, MissingFieldIsNamed) {
  std::string json = SampleRecordJson(Logic("p", 1));
  size_t at = json.find("\"verdict\"");
  json.erase(at, json.find(',', at) - at + 1);
  auto back = ParseSampleRecord(json);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("\"verdict\""), std::string::npos);
}

TEST(SampleRecord, SameResultIgnoresTiming) {
  SampleRecord a = Logic("p", 1), b = Logic("p", 1);
  b.grade_seconds = 9;
  b.shared_result = true;
  EXPECT_TRUE(SameResult(a, b));
  b.mode = FailureMode::kCorrect;
  EXPECT_FALSE(SameResult(a, b));
}

TEST(StoreLine, FrameAndCheck) {
  std::string line = FrameLine(R"({"type":"bad","line":3})");
  ASSERT_EQ(line.back(), '\n');
  std::string_view body(line.data(), line.size() - 1);
  auto ok = CheckLine(body);
  ASSERT_TRUE(ok.has_value());
  // One flipped byte anywhere fails the check.
  std::string flipped(body);
  flipped[10] = 'x';
  EXPECT_FALSE(CheckLine(flipped).has_value());
  EXPECT_FALSE(CheckLine(body.substr(0, body.size() - 3)).has_value());
}

TEST(ResultStore, RoundTripAndResume) {
  ScratchDir dir("batch_store_roundtrip");
  std::string d = (dir.path() / "s").string();
  {
    auto store = ResultStore::Open(d, Config());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ProblemResolution p;
    p.problem = "apps/1";
    p.reference = ReferenceKind::kStandIn;
    p.stand_in_key = TestKey(42);
    p.tests = 3;
    ASSERT_TRUE((*store)->AppendProblem(p).ok());
    ASSERT_TRUE((*store)->AppendSamples({Logic("apps/1", 5), Logic("apps/1", 6)}).ok());
    ASSERT_TRUE((*store)->AppendBad({"x.jsonl", 4, "missing field \"completion\""}).ok());
  }
  auto contents = ReadStore(d);
  ASSERT_TRUE(contents.ok()) << contents.status().ToString();
  ASSERT_EQ(contents->samples.size(), 2u);
  EXPECT_EQ(contents->samples[1].key, TestKey(6));
  ASSERT_EQ(contents->problems.size(), 1u);
  EXPECT_EQ(contents->problems[0].reference, ReferenceKind::kStandIn);
  EXPECT_EQ(contents->problems[0].stand_in_key, TestKey(42));
  ASSERT_EQ(contents->bad.size(), 1u);
  EXPECT_EQ(contents->bad[0].ToString(), "x.jsonl:4: missing field \"completion\"");
  EXPECT_EQ(contents->torn_lines, 0);

  // Reopen with the same config (paths and commit may differ): resumes with the contents.
  RunConfig moved = Config();
  moved.problems_path = "/elsewhere/HumanEval.jsonl.gz";
  moved.egca_commit = "def";
  auto again = ResultStore::Open(d, moved);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->existing().samples.size(), 2u);
}

TEST(ResultStore, TornLastLineIsCutAndIgnored) {
  ScratchDir dir("batch_store_torn");
  std::string d = (dir.path() / "s").string();
  {
    auto store = ResultStore::Open(d, Config());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->AppendSamples({Logic("p", 1), Logic("p", 2)}).ok());
  }
  std::string path = d + "/results.jsonl";
  std::string whole = ReadFile(path).value();
  // A kill -9 in the middle of the third record's write.
  std::string third = FrameLine(SampleRecordJson(Logic("p", 3)));
  {
    std::ofstream out(path, std::ios::app | std::ios::binary);
    out << third.substr(0, third.size() / 2);
  }
  auto read = ReadStore(d);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->samples.size(), 2u);
  EXPECT_EQ(read->torn_lines, 1);
  EXPECT_EQ(read->valid_bytes, whole.size());
  {
    auto store = ResultStore::Open(d, Config());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->AppendSamples({Logic("p", 3)}).ok());
  }
  auto after = ReadStore(d);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->samples.size(), 3u);
  EXPECT_EQ(after->samples[2].key, TestKey(3));
  EXPECT_EQ(after->torn_lines, 0);
  EXPECT_EQ(after->corrupt_lines, 0);
}

TEST(ResultStore, CorruptMiddleLineIsSkippedAndCounted) {
  ScratchDir dir("batch_store_corrupt");
  std::string d = (dir.path() / "s").string();
  {
    auto store = ResultStore::Open(d, Config());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->AppendSamples({Logic("p", 1), Logic("p", 2), Logic("p", 3)}).ok());
  }
  std::string path = d + "/results.jsonl";
  std::string text = ReadFile(path).value();
  size_t second = text.find("\"key\":\"" + TestKey(2) + "\"");
  ASSERT_NE(second, std::string::npos);
  text[second + 8] = '9';  // a flipped digit in the key: the crc no longer matches
  ASSERT_TRUE(WriteFileAtomic(path, text).ok());
  auto read = ReadStore(d);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->samples.size(), 2u);
  EXPECT_EQ(read->corrupt_lines, 1);
}

TEST(ResultStore, RefusesADifferentConfig) {
  ScratchDir dir("batch_store_config");
  std::string d = (dir.path() / "s").string();
  { ASSERT_TRUE(ResultStore::Open(d, Config()).ok()); }
  RunConfig other = Config();
  other.timeout_seconds = 5;
  auto store = ResultStore::Open(d, other);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("timeout_seconds"), std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find("refusing to resume"), std::string::npos);

  RunConfig data = Config();
  data.samples_digest = "00000000000000cc";
  auto changed = ResultStore::Open(d, data);
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.status().message().find("samples_digest"), std::string::npos);
}

TEST(ResultStore, OneWriterAtATime) {
  ScratchDir dir("batch_store_lock");
  std::string d = (dir.path() / "s").string();
  auto first = ResultStore::Open(d, Config());
  ASSERT_TRUE(first.ok());
  auto second = ResultStore::Open(d, Config());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("in use"), std::string::npos);
  first.value().reset();
  EXPECT_TRUE(ResultStore::Open(d, Config()).ok());
}

TEST(ResultStore, NotAStore) {
  ScratchDir dir("batch_store_none");
  auto missing = ReadStore((dir.path() / "nothing").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  dir.Write("results.jsonl", "{\"hello\": 1}\n");
  auto bad = ReadStore(dir.path().string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("results.jsonl:1"), std::string::npos);
}

// A store written by format 1 (16-hex FNV-1a keys): read as it is, never resumed or merged.
TEST(ResultStore, Format1IsReadButNotResumed) {
  ScratchDir dir("store_format1");
  std::string d = (dir.path() / "s").string();
  std::filesystem::create_directories(d);
  SampleRecord old = Logic("p", 1);
  std::string record = SampleRecordJson(old);
  const std::string key_field = "\"key\":\"" + old.key + "\"";
  record.replace(record.find(key_field), key_field.size(), "\"key\":\"00000000000000aa\"");
  nlohmann::ordered_json header = {{"type", "header"},
                                   {"format", "egca-batch-store/1"},
                                   {"config", nlohmann::ordered_json::parse(Config().ToJson())}};
  ASSERT_TRUE(WriteFileAtomic(d + "/results.jsonl", FrameLine(header.dump()) + FrameLine(record))
                  .ok());
  auto read = ReadStore(d);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->format, 1);
  ASSERT_EQ(read->samples.size(), 1u);
  EXPECT_EQ(read->samples[0].key, "00000000000000aa");

  auto resumed = ResultStore::Open(d, Config());
  ASSERT_FALSE(resumed.ok());
  EXPECT_NE(resumed.status().message().find("store format egca-batch-store/1"), std::string::npos)
      << resumed.status().message();
  EXPECT_NE(resumed.status().message().find("new --store"), std::string::npos);
  MergeReport report;
  Status merged = MergeStores({d}, (dir.path() / "m").string(), &report);
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.message().find("egca-batch-store/1"), std::string::npos);

  // Control: a store this egca writes says format 2 and resumes.
  std::string d2 = (dir.path() / "s2").string();
  ASSERT_TRUE(ResultStore::Open(d2, Config()).ok());
  EXPECT_NE(ReadFile(d2 + "/results.jsonl").value().find("\"egca-batch-store/2\""),
            std::string::npos);
  auto again = ResultStore::Open(d2, Config());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->existing().format, 2);
}

TEST(ProblemShard, StableAndCovering) {
  // Fnv1a64("HumanEval/0") mod 3, computed independently (Python: FNV-1a 64 by hand).
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : std::string("HumanEval/0")) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  EXPECT_EQ(ProblemShard("HumanEval/0", 3), static_cast<int32_t>(h % 3));
  EXPECT_EQ(ProblemShard("anything", 1), 0);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 164; ++i) counts[ProblemShard("HumanEval/" + std::to_string(i), 3)]++;
  EXPECT_EQ(counts[0] + counts[1] + counts[2], 164);
  for (int c : counts) EXPECT_GT(c, 30);  // roughly even
}

TEST(MergeStores, CombinesShardsAndChecksThem) {
  ScratchDir dir("batch_store_merge");
  auto shard = [&](int i, std::vector<SampleRecord> records) {
    RunConfig c = Config();
    c.shard_index = i;
    c.shard_count = 2;
    std::string d = (dir.path() / ("s" + std::to_string(i))).string();
    auto store = ResultStore::Open(d, c);
    EXPECT_TRUE(store.ok());
    EXPECT_TRUE((*store)->AppendSamples(records).ok());
    EXPECT_TRUE((*store)->AppendBad({"f.jsonl", 2, "broken"}).ok());
    return d;
  };
  std::string s0 = shard(0, {Logic("a", 1), Logic("a", 2)});
  std::string s1 = shard(1, {Logic("b", 1)});
  MergeReport report;
  std::string out = (dir.path() / "merged").string();
  Status merged = MergeStores({s0, s1}, out, &report);
  ASSERT_TRUE(merged.ok()) << merged.ToString();
  auto contents = ReadStore(out);
  ASSERT_TRUE(contents.ok());
  EXPECT_EQ(contents->samples.size(), 3u);
  EXPECT_EQ(contents->bad.size(), 1u);  // the same bad record from both shards
  EXPECT_EQ(contents->config.shard_count, 1);

  // A shard missing.
  Status missing = MergeStores({s0}, (dir.path() / "m2").string(), nullptr);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("missing"), std::string::npos) << missing.message();

  // The same key with a different result.
  SampleRecord changed = Logic("a", 1);
  changed.mode = FailureMode::kCorrect;
  RunConfig c = Config();
  c.shard_index = 1;
  c.shard_count = 2;
  std::string s1b = (dir.path() / "s1b").string();
  {
    auto store = ResultStore::Open(s1b, c);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->AppendSamples({changed}).ok());
  }
  Status conflict = MergeStores({s0, s1b}, (dir.path() / "m3").string(), nullptr);
  EXPECT_FALSE(conflict.ok());
  EXPECT_NE(conflict.message().find("different results"), std::string::npos) << conflict.message();

  // Different configs.
  RunConfig t = Config();
  t.shard_index = 1;
  t.shard_count = 2;
  t.timeout_seconds = 9;
  std::string s1c = (dir.path() / "s1c").string();
  { ASSERT_TRUE(ResultStore::Open(s1c, t).ok()); }
  Status differ = MergeStores({s0, s1c}, (dir.path() / "m4").string(), nullptr);
  EXPECT_FALSE(differ.ok());
  EXPECT_NE(differ.message().find("timeout_seconds"), std::string::npos) << differ.message();
}

}  // namespace
}  // namespace egca::batch
