// Hostile programs that aim at what one program's run leaves for the next ones (issue 38),
// end to end through egca::tracer::Executor, with honest controls. The programs and why
// each expects what it does: tests/sandbox/hostile/sequence/*.py (their header comments).
//
// 1. No child holds what an earlier child sent: a job sends an answer nobody else can
//    compute (plant_answer.py, as a reference run just before a candidate), the next
//    jobs' children, forked ahead as spares, search their whole address space for it
//    (scan_for_answer.py) on stdio and call tests, and fail.
// 2. The reused test process starts every test as a fresh one would: an honest sample
//    whose test needs half of its address space gets the same verdict after many samples
//    that leave garbage there (leave_cycles.py, forge_unreached_entries.py) as alone.
// 3. A program cannot opt out of one-process semantics by ending its process
//    (end_when_dirty.py): it never passes more asserts than the same program answering
//    wrongly (dirty_state_control.py).
//
// Runs as whoever runs ctest: as root (uid drop, namespaces, Landlock) and unprivileged
// (user namespace or none) the expectations are the same; docs/sandbox.md, "Hostile
// sequences".
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "egca/sandbox/verdict.h"
#include "egca/tracer/executor.h"
#include "egca/tracer/test_case.h"

namespace egca::sandbox {
namespace {

using tracer::Executor;
using tracer::ExecutorOptions;
using tracer::ProgramResult;
using tracer::RunOptions;
using tracer::TestCase;
using tracer::TestResult;

const std::string kDir = std::string(EGCA_SOURCE_DIR) + "/tests/sandbox/hostile/sequence/";

std::string Program(const std::string& name) {
  std::ifstream in(kDir + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << kDir + name;
  return ss.str();
}

std::unique_ptr<Executor> NewExecutor() {
  auto executor = Executor::Create(ExecutorOptions{});
  EXPECT_TRUE(executor.ok()) << executor.status().ToString();
  return executor.ok() ? std::move(executor).value() : nullptr;
}

// Generous limits: nothing here may depend on the machine's speed. An address-space scan
// reads every mapped page (seconds on a loaded machine).
RunOptions ScanOptions() {
  RunOptions options;
  options.limits.wall_seconds = 60;
  options.limits.cpu_seconds = 30;
  return options;
}

std::string Describe(const TestResult& r) {
  const Verdict& v = r.verdict;
  return fmt::format("{} {}: {} [{}] actual={}", VerdictName(v.kind), v.error_type,
                     v.message.substr(0, 200), v.detail.substr(0, 200), v.actual.substr(0, 200));
}

// ---- 1. What a child sent is in no later child's memory ----

// The reference's answer (stdio: its stdout; call: the returned string) as the expected
// answer of the next jobs, which scan for it.
TEST(SandboxHostileSequence, NoChildFindsTheAnswerAnEarlierJobSent) {
  auto executor = NewExecutor();
  ASSERT_NE(executor, nullptr);
  const std::string reference = Program("plant_answer.py");
  const std::string scanner = Program("scan_for_answer.py");
  const RunOptions options = ScanOptions();
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    // stdio: the reference's stdout is the expected output.
    auto planted = executor->Run(reference, TestCase::Stdio(""), options);
    ASSERT_TRUE(planted.ok()) << planted.status().ToString();
    const std::string answer = planted->stdout_data;
    ASSERT_EQ(answer.size(), 4 + 4 + 32 + 1) << answer;  // "egca" "OUT-" + 32 hex + "\n"
    ASSERT_NE(planted->stderr_data.find(answer), std::string::npos);
    // The next three jobs: the first one's child was forked ahead while the reference
    // ran, the others after the server had its output.
    for (int next = 0; next < 3; ++next) {
      auto scanned = executor->Run(scanner, TestCase::Stdio("", answer), options);
      ASSERT_TRUE(scanned.ok()) << scanned.status().ToString();
      EXPECT_EQ(scanned->verdict.kind, VerdictKind::kWrongAnswer) << Describe(*scanned);
      EXPECT_EQ(scanned->stdout_data, "not found\n") << "job " << next + 1 << " after the "
                                                     << "reference found its answer";
      EXPECT_EQ(scanned->verdict.phases.fork, 0) << "a spare forked ahead ran this job";
    }
    // call: the reference's returned value (its record) is the expected value.
    auto returned = executor->Run(reference, TestCase::Call("solve", "[]"), options);
    ASSERT_TRUE(returned.ok()) << returned.status().ToString();
    const std::string value = returned->verdict.actual;  // the repr: 'egcaOUT-...'
    ASSERT_EQ(value.size(), 2 + 8 + 32) << value;
    const std::string expected_json = "\"" + value.substr(1, value.size() - 2) + "\"";
    for (int next = 0; next < 3; ++next) {
      auto scanned = executor->Run(scanner, TestCase::Call("solve", "[]", expected_json), options);
      ASSERT_TRUE(scanned.ok()) << scanned.status().ToString();
      EXPECT_EQ(scanned->verdict.kind, VerdictKind::kWrongAnswer) << Describe(*scanned);
      EXPECT_EQ(scanned->verdict.actual, "'not found'") << "job " << next + 1;
    }
  }
  // The control: the same scan finds an answer of that shape when it is in the process.
  auto control = executor->Run(scanner, TestCase::Call("control", "[]"), options);
  ASSERT_TRUE(control.ok()) << control.status().ToString();
  const std::string& pair = control->verdict.actual;  // ['egcaOUT-x...', 'egcaOUT-x...']
  ASSERT_EQ(pair.size(), 2 * 42 + 4) << pair;
  EXPECT_EQ(pair.substr(1, 42), pair.substr(45, 42)) << pair;
}

// The order the tools use for one problem: the reference, then the candidate, on every
// test of the problem (stdio and call), in one executor; and the same with two workers
// sharing a pool (each job on whichever server is free).
TEST(SandboxHostileSequence, ACandidateAfterItsReferenceCannotPrintTheReferencesOutput) {
  auto executor = NewExecutor();
  ASSERT_NE(executor, nullptr);
  const std::string reference = Program("plant_answer.py");
  const std::string scanner = Program("scan_for_answer.py");
  const RunOptions options = ScanOptions();
  int judged = 0;
  for (int problem = 0; problem < 3; ++problem) {
    std::vector<TestCase> tests = {TestCase::Stdio(""), TestCase::Call("solve", "[]")};
    auto ref = executor->RunAll(reference, tests, options);
    ASSERT_TRUE(ref.ok()) << ref.status().ToString();
    ASSERT_EQ(ref->tests.size(), 2u);
    tests[0] = TestCase::Stdio("", ref->tests[0].stdout_data);
    const std::string& value = ref->tests[1].verdict.actual;
    tests[1] = TestCase::Call("solve", "[]", "\"" + value.substr(1, value.size() - 2) + "\"");
    auto candidate = executor->RunAll(scanner, tests, options);
    ASSERT_TRUE(candidate.ok()) << candidate.status().ToString();
    EXPECT_EQ(candidate->passed, 0) << Describe(candidate->tests[0]) << " | "
                                    << Describe(candidate->tests[1]);
    judged += static_cast<int>(candidate->tests.size());
  }
  EXPECT_EQ(judged, 6);
}

// ---- 2. The reused test process starts every test as a fresh one ----

TestCase HonestTest() {
  // The data set's test: half of a 1 GiB address space for itself, then the check.
  return TestCase::Asserts(
      "data = bytearray(512 << 20)\n"
      "data[-1] = 1\n"
      "assert double(21) == 42 and data[-1] == 1\n");
}

RunOptions MemoryOptions() {
  RunOptions options;
  options.limits.wall_seconds = 60;
  options.limits.cpu_seconds = 30;
  options.limits.memory_bytes = 1ull << 30;
  return options;
}

TEST(SandboxHostileSequence, AnHonestSampleAfterHostileOnesGetsItsVerdictAlone) {
  const std::string honest = Program("honest_needs_memory.py");
  const RunOptions options = MemoryOptions();
  VerdictKind alone;
  {
    auto executor = NewExecutor();
    ASSERT_NE(executor, nullptr);
    auto r = executor->RunAll(honest, {HonestTest()}, options);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    alone = r->tests[0].verdict.kind;
    EXPECT_EQ(alone, VerdictKind::kOk) << Describe(r->tests[0]);
  }
  struct Hostile {
    std::string file;
    TestCase test;
  };
  const std::vector<Hostile> hostiles = {
      {"leave_cycles.py",
       TestCase::Asserts("assert all(len(grow(15000000)) == 2 for _ in range(4))\n")},
      {"forge_unreached_entries.py",
       TestCase::Asserts("assert all(grow(7) == 7 for _ in range(80))\n")},
  };
  for (const Hostile& h : hostiles) {
    SCOPED_TRACE(h.file);
    auto executor = NewExecutor();
    ASSERT_NE(executor, nullptr);
    const std::string source = Program(h.file);
    for (int n = 0; n < 4; ++n) {
      auto r = executor->RunAll(source, {h.test}, options);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (h.file == "forge_unreached_entries.py") {
        EXPECT_EQ(r->tests[0].verdict.kind, VerdictKind::kKilled) << Describe(r->tests[0]);
        EXPECT_NE(r->tests[0].verdict.detail.find("nothing in the message refers to"),
                  std::string::npos)
            << Describe(r->tests[0]);
      }
    }
    auto after = executor->RunAll(honest, {HonestTest()}, options);
    ASSERT_TRUE(after.ok()) << after.status().ToString();
    EXPECT_EQ(after->tests[0].verdict.kind, alone) << Describe(after->tests[0]);
  }
}

// ---- 3. Ending the process does not buy a fresh one ----

std::vector<TestCase> DirtyAsserts() {
  std::vector<TestCase> tests;
  for (int x = 1; x <= 4; ++x) {
    tests.push_back(TestCase::Asserts(fmt::format("assert f({}) == {}\n", x, 2 * x)));
  }
  return tests;
}

TEST(SandboxHostileSequence, EndingItsProcessNeverPassesMoreThanAnsweringWrongly) {
  auto executor = NewExecutor();
  ASSERT_NE(executor, nullptr);
  RunOptions options;
  options.limits.wall_seconds = 3;  // the sleeper's time-out; the others end at once
  options.limits.cpu_seconds = 3;
  options.limits.output_bytes = 1 << 20;
  auto control = executor->RunAll(Program("dirty_state_control.py"), DirtyAsserts(), options);
  ASSERT_TRUE(control.ok()) << control.status().ToString();
  ASSERT_EQ(control->tests.size(), 4u);
  EXPECT_EQ(control->passed, 1);
  EXPECT_TRUE(control->tests[0].verdict.passed());
  const std::string hostile = Program("end_when_dirty.py");
  const std::vector<std::pair<std::string, VerdictKind>> ways = {
      {"exit", VerdictKind::kKilled},          {"sigkill", VerdictKind::kKilled},
      {"close", VerdictKind::kKilled},         {"memory", VerdictKind::kMemoryLimit},
      {"flood", VerdictKind::kOutputLimit},    {"sleep", VerdictKind::kTimeout},
  };
  for (const auto& [how, kind] : ways) {
    SCOPED_TRACE(how);
    std::string source = hostile;
    const size_t at = source.find("HOW = \"exit\"");
    ASSERT_NE(at, std::string::npos);
    source.replace(at, 12, "HOW = \"" + how + "\"");
    auto r = executor->RunAll(source, DirtyAsserts(), options);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->tests.size(), 4u);
    EXPECT_LE(r->passed, control->passed);
    EXPECT_TRUE(r->tests[0].verdict.passed()) << Describe(r->tests[0]);
    // The assert during which it ended: how it ended.
    EXPECT_EQ(r->tests[1].verdict.kind, kind) << Describe(r->tests[1]);
    // The later ones shared that process.
    for (int i = 2; i < 4; ++i) {
      EXPECT_FALSE(r->tests[i].verdict.passed()) << Describe(r->tests[i]);
      EXPECT_EQ(r->tests[i].verdict.detail.rfind("not run: ", 0), 0u) << Describe(r->tests[i]);
    }
  }
}

// Ending the process during the batch's first assert does not buy the second one a fresh
// process either (it would be the first answered in a clean state).
TEST(SandboxHostileSequence, EndingDuringTheFirstAssertFailsTheRest) {
  auto executor = NewExecutor();
  ASSERT_NE(executor, nullptr);
  const std::string source =
      "import os\n"
      "calls = []\n"
      "def f(x):\n"
      "    calls.append(x)\n"
      "    if x == 1:\n"
      "        os._exit(0)\n"
      "    return 2 * x if len(calls) == 1 else -1\n";
  RunOptions options;
  options.limits.wall_seconds = 10;
  auto r = executor->RunAll(source, DirtyAsserts(), options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->passed, 0);
  ASSERT_EQ(r->tests.size(), 4u);
  EXPECT_EQ(r->tests[0].verdict.kind, VerdictKind::kKilled) << Describe(r->tests[0]);
}

}  // namespace
}  // namespace egca::sandbox
