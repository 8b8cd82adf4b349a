// One candidate process per program (docs/executor.md, "One candidate process per
// program"): Executor::RunAll runs a program's assert tests in one candidate process and
// one test-process session. Each test keeps its own verdict (compared here with one pair
// per test, the path before), its own time limits, and a pass needs what a pair of its own
// needs; a program that ends, crashes, closes its channel, forks or forges records in the
// middle of the sequence gains nothing: the assert during which its process ended fails
// with how it ended, and the asserts after it fail with it (issue 38; the hostile programs
// that tried are in tests/sandbox/hostile/sequence/).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "assert_batching.h"
#include "common/shared_executor.h"
#include "egca/sandbox/verdict.h"
#include "egca/tracer/executor.h"
#include "egca/tracer/test_case.h"

namespace egca::tracer {
namespace {

using sandbox::VerdictKind;
using sandbox::VerdictName;

class AssertBatch : public egca::testing::SharedExecutorTest {
 protected:
  void TearDown() override { SetAssertBatching(AssertBatching::kFromEnvironment); }

  static RunOptions Options() {
    RunOptions options;
    // Generous: nothing here may depend on the machine's speed.
    options.limits.wall_seconds = 30;
    options.limits.cpu_seconds = 10;
    return options;
  }
  static std::vector<TestCase> Asserts(const std::vector<std::string>& lines,
                                       const std::string& setup = "") {
    std::vector<TestCase> tests;
    for (const std::string& line : lines) tests.push_back(TestCase::Asserts(line + "\n", setup));
    return tests;
  }
  static ProgramResult RunAll(const std::string& source, const std::vector<TestCase>& tests,
                              bool batched, const RunOptions& options = Options()) {
    SetAssertBatching(batched ? AssertBatching::kOn : AssertBatching::kOff);
    StatusOr<ProgramResult> result = executor_->RunAll(source, tests, options);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? std::move(result).value() : ProgramResult{};
  }
  static std::string Describe(const TestResult& r) {
    const sandbox::Verdict& v = r.verdict;
    return std::string(VerdictName(v.kind)) + " " + v.error_type + ": " + v.message + " @" +
           std::to_string(v.line) + ":" + std::to_string(v.column) + "-" +
           std::to_string(v.end_line) + ":" + std::to_string(v.end_column) + " [" + v.detail + "]";
  }
  static std::vector<std::string> Verdicts(const ProgramResult& p) {
    std::vector<std::string> out;
    for (const TestResult& r : p.tests) out.push_back(Describe(r));
    return out;
  }
  static std::vector<VerdictKind> Kinds(const ProgramResult& p) {
    std::vector<VerdictKind> out;
    for (const TestResult& r : p.tests) out.push_back(r.verdict.kind);
    return out;
  }
  // Both ways; every verdict (kind, exception, position, detail) must agree.
  static ProgramResult ExpectSameBothWays(const std::string& source,
                                          const std::vector<TestCase>& tests,
                                          const RunOptions& options = Options()) {
    ProgramResult one_each = RunAll(source, tests, /*batched=*/false, options);
    ProgramResult batched = RunAll(source, tests, /*batched=*/true, options);
    EXPECT_EQ(Verdicts(batched), Verdicts(one_each)) << source;
    EXPECT_EQ(batched.passed, one_each.passed) << source;
    return batched;
  }
};

constexpr VerdictKind kOk = VerdictKind::kOk;

TEST_F(AssertBatch, OneCandidateProcessServesAProgramsAsserts) {
  // The failing asserts' messages carry the candidate's pid.
  const std::string source = "import os\ndef pid():\n    return os.getpid()\n";
  const std::vector<TestCase> tests =
      Asserts({"assert pid() < 0, pid()", "assert pid() < 0, pid()", "assert pid() < 0, pid()"});
  ProgramResult batched = RunAll(source, tests, true);
  ASSERT_EQ(batched.tests.size(), 3u);
  EXPECT_EQ(batched.tests[0].verdict.message, batched.tests[1].verdict.message);
  EXPECT_EQ(batched.tests[1].verdict.message, batched.tests[2].verdict.message);
  ProgramResult one_each = RunAll(source, tests, false);
  ASSERT_EQ(one_each.tests.size(), 3u);
  EXPECT_NE(one_each.tests[0].verdict.message, one_each.tests[1].verdict.message);
}

TEST_F(AssertBatch, StateTheProgramKeepsCarriesOverAsInMbppsHarness) {
  // The module code runs once; what the program keeps between calls stays, as when MBPP's
  // harness runs a program's asserts in one process.
  const std::string source = "calls = []\ndef f(x):\n    calls.append(x)\n    return len(calls)\n";
  const std::vector<TestCase> tests =
      Asserts({"assert f(0) == 1", "assert f(0) == 2", "assert f(0) == 3"});
  EXPECT_EQ(Kinds(RunAll(source, tests, true)), (std::vector<VerdictKind>{kOk, kOk, kOk}));
  EXPECT_EQ(
      Kinds(RunAll(source, tests, false)),
      (std::vector<VerdictKind>{kOk, VerdictKind::kRuntimeError, VerdictKind::kRuntimeError}));
}

TEST_F(AssertBatch, EachAssertKeepsItsOwnVerdict) {
  struct Case {
    std::string source;
    std::vector<std::string> asserts;
    std::string setup;
  };
  const std::vector<Case> cases = {
      // Passes, wrong answers, the program's exceptions at their own lines.
      {"def f(x):\n    if x == 2:\n        raise ValueError('two')\n"
       "    if x == 4:\n        return 1 // 0\n    return x * 2\n",
       {"assert f(1) == 2", "assert f(2) == 4", "assert f(3) == 7", "assert f(4) == 8",
        "assert f(5) == 10", "assert f(6) == 12"}},
      // An exception the test catches, then a failing assert.
      {"def f(x):\n    return [x][x]\n",
       {"assert f(0) == 0", "try:\n    f(3)\nexcept IndexError:\n    pass\nassert f(0) == 1",
        "assert f(1) == 1"}},
      // Not plain data; iterators; keyword arguments; a global the test reads.
      {"LIMIT = 3\nclass P:\n    pass\ndef f(x=1):\n    return P() if x == 0 else iter(range(x))\n",
       {"assert list(f(x=2)) == [0, 1]", "assert f(0) == 1", "assert LIMIT == 3",
        "assert list(f(LIMIT)) == [0, 1, 2]"}},
      // MBPP's set-up code and objects the program changes in place.
      {"def g(xs):\n    xs.append(1)\n    return len(xs)\n",
       {"assert g(data) == 3 and data == [0, 0, 1]", "assert g([]) == 2", "assert g(data) == 3"},
       "data = [0, 0]"},
      // The program runs out of recursion inside a call, then exits inside the last one.
      {"import sys\ndef f(x):\n    if x == 2:\n        sys.exit(3)\n    return f(x) if x == 9 else "
       "x\n",
       {"assert f(1) == 1", "assert f(9) == 9", "assert f(3) == 3", "assert f(2) == 2"}},
      // Module-level failure: every test fails as in a pair of its own.
      {"def f(x):\n    return x\nraise KeyError('at import')\n",
       {"assert f(1) == 1", "assert f(2) == 2"}},
      // A syntax error.
      {"def f(x)\n    return x\n", {"assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3"}},
      // A name the program does not define; a test that fails on its own.
      {"def f(x):\n    return x\n", {"assert h(1) == 1", "assert f(1) == 1", "assert 1 == 2"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.source);
    ExpectSameBothWays(c.source, Asserts(c.asserts, c.setup));
  }
}

TEST_F(AssertBatch, EveryAssertKeepsItsOwnTimeBudget) {
  // Each call burns its argument in CPU seconds. The passing asserts burn 1.6 s together,
  // over the 1 s limit: each assert has the limit of its own; the last one runs out.
  const std::string source =
      "import time\n"
      "def f(x):\n"
      "    end = time.process_time() + x\n"
      "    while time.process_time() < end:\n"
      "        pass\n"
      "    return x\n";
  const std::vector<TestCase> tests =
      Asserts({"assert f(0.4) == 0.4", "assert f(0.4) == 0.4", "assert f(0.4) == 0.4",
               "assert f(0.4) == 0.4", "assert f(1000) == 1000"});
  RunOptions options = Options();
  options.limits.cpu_seconds = 1;
  ProgramResult batched = ExpectSameBothWays(source, tests, options);
  EXPECT_EQ(Kinds(batched), (std::vector<VerdictKind>{kOk, kOk, kOk, kOk, VerdictKind::kTimeout}));
}

// The process ends during an assert that is not the last (a time-out, a crash, an exit):
// that assert fails with how it ended, and the asserts after it, which share the process,
// fail with it ("not run"), as MBPP's harness fails a program whose process ends early. A
// pair per assert (the comparison) would run them in fresh processes.
TEST_F(AssertBatch, TheProcessEndingInTheMiddleFailsTheAssertsAfterIt) {
  const std::vector<std::string> asserts = {"assert f(1) == 1", "assert f(2) == 2",
                                            "assert f(3) == 3", "assert f(4) == 4"};
  struct Case {
    std::string source;
    VerdictKind ended;
  };
  RunOptions options = Options();
  options.limits.wall_seconds = 3;
  const std::vector<Case> cases = {
      {"import time\ndef f(x):\n    if x == 2:\n        time.sleep(1000)\n    return x\n",
       VerdictKind::kTimeout},
      {"import os\ndef f(x):\n    if x == 2:\n        os.abort()\n    return x\n",
       VerdictKind::kKilled},
      {"import sys\ndef f(x):\n    if x == 2:\n        sys.exit(3)\n    return x\n",
       VerdictKind::kKilled},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.source);
    ProgramResult one_each = RunAll(c.source, Asserts(asserts), /*batched=*/false, options);
    EXPECT_EQ(one_each.passed, 3);
    ProgramResult batched = RunAll(c.source, Asserts(asserts), /*batched=*/true, options);
    ASSERT_EQ(batched.tests.size(), 4u);
    EXPECT_EQ(Kinds(batched), (std::vector<VerdictKind>{kOk, c.ended, c.ended, c.ended}))
        << ::testing::PrintToString(Verdicts(batched));
    // The assert that ended it reads as in a pair of its own.
    EXPECT_EQ(Describe(batched.tests[1]), Describe(one_each.tests[1]));
    for (int i = 2; i < 4; ++i) {
      EXPECT_EQ(batched.tests[i].verdict.detail.rfind("not run: ", 0), 0u)
          << Describe(batched.tests[i]);
      EXPECT_NE(batched.tests[i].verdict.detail.find("during test 2"), std::string::npos)
          << Describe(batched.tests[i]);
    }
  }
}

TEST_F(AssertBatch, LimitsThatAddUpOverAssertsAreEachAssertsOwn) {
  // Each call prints 3 KB; the output limit is 8 KB: one candidate process for six asserts
  // reaches it, a pair of its own per assert never does. The verdicts are the latter's.
  const std::string source = "def f(x):\n    print('x' * 3000)\n    return x\n";
  RunOptions options = Options();
  options.limits.output_bytes = 8000;
  ProgramResult batched =
      ExpectSameBothWays(source,
                         Asserts({"assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3",
                                  "assert f(4) == 4", "assert f(5) == 5", "assert f(6) == 6"}),
                         options);
  EXPECT_EQ(batched.passed, 6);
}

// ---- Hostile programs: nothing in the middle of a sequence gains a pass ----

TEST_F(AssertBatch, HostileExitZeroMidSequence) {
  const std::string source =
      "import os\ndef f(x):\n    if x == 3:\n        os._exit(0)\n"
      "    return x\n";
  ProgramResult batched = RunAll(
      source,
      Asserts({"assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3", "assert f(4) == 4"}),
      true);
  EXPECT_EQ(Kinds(batched), (std::vector<VerdictKind>{kOk, kOk, VerdictKind::kKilled,
                                                      VerdictKind::kKilled}));
}

TEST_F(AssertBatch, HostileClosesItsChannelEarly) {
  const std::string source =
      "import os\ndef f(x):\n    if x == 2:\n        os.close(4)\n"
      "    return x\n";
  ProgramResult batched = RunAll(
      source, Asserts({"assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3"}), true);
  EXPECT_EQ(Kinds(batched),
            (std::vector<VerdictKind>{kOk, VerdictKind::kKilled, VerdictKind::kKilled}));
}

TEST_F(AssertBatch, HostileForksMidSequence) {
  const std::string source =
      "import os\ndef f(x):\n    if x == 2:\n        os.fork()\n"
      "    return x\n";
  ProgramResult batched = RunAll(
      source, Asserts({"assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3"}), true);
  EXPECT_EQ(Kinds(batched),
            (std::vector<VerdictKind>{kOk, VerdictKind::kViolation, VerdictKind::kViolation}));
}

TEST_F(AssertBatch, HostileDiesAfterAnsweringWheneverItIsNotFirst) {
  // It knows how many asserts it served (its calls), answers right, then ends the process
  // shortly after (a timer) whenever it served one before: no pass comes from a process
  // that did not end normally, and the assert during which it ended and those after it
  // fail. Which assert that is depends on the timer (a batch whose process ends normally
  // before the timer fires counts): never more passes than one pair per assert gives (3:
  // the last answer is wrong), the first always, the last never.
  const std::string source =
      "import os, threading\n"
      "served = []\n"
      "def f(x):\n"
      "    served.append(x)\n"
      "    if len(served) > 1:\n"
      "        threading.Timer(0.05, lambda: os._exit(0)).start()\n"
      "    return x if x < 4 else -x\n";
  const std::vector<TestCase> tests =
      Asserts({"assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3", "assert f(4) == 4"});
  EXPECT_EQ(RunAll(source, tests, false).passed, 3);
  ProgramResult batched = RunAll(source, tests, true);
  ASSERT_EQ(batched.tests.size(), 4u);
  EXPECT_TRUE(batched.tests[0].verdict.passed()) << Describe(batched.tests[0]);
  EXPECT_FALSE(batched.tests[3].verdict.passed()) << Describe(batched.tests[3]);
  EXPECT_LE(batched.passed, 3);
}

TEST_F(AssertBatch, HostileThreadForgesAnswersAndRecords) {
  // A wrong program whose thread writes forged (wrong) replies on the channel and forged
  // records on every other descriptor it can, all through the sequence: no assert passes,
  // none is lost to an error of egca's.
  const std::string source =
      "import os, threading, json, time\n"
      "def spam():\n"
      "    reply = json.dumps({'value': ['i', '7'], 'objs': []}).encode()\n"
      "    frame = len(reply).to_bytes(4, 'big') + reply\n"
      "    record = bytes([8, 1, 0xa1, 1]) + b'\\x01' * 8\n"
      "    for _ in range(200):\n"
      "        for fd in range(3, 12):\n"
      "            try:\n"
      "                os.write(fd, frame if fd == 4 else len(record).to_bytes(4, 'little') + "
      "record)\n"
      "            except OSError:\n"
      "                pass\n"
      "        time.sleep(0.005)\n"
      "threading.Thread(target=spam, daemon=True).start()\n"
      "def f(x):\n"
      "    time.sleep(0.02)\n"
      "    return x + 1000\n";
  ProgramResult batched =
      RunAll(source,
             Asserts({"assert f(2) == 2", "assert f(2) == 2", "assert f(2) == 2",
                      "assert f(2) == 2", "assert f(2) == 2", "assert f(2) == 2"}),
             true);
  EXPECT_EQ(batched.passed, 0) << ::testing::PrintToString(Verdicts(batched));
  EXPECT_EQ(batched.tests.size(), 6u);
}

TEST_F(AssertBatch, HostileBusyThreadBetweenAssertsCountsAgainstThem) {
  // A thread started by the module burns CPU while the asserts run: its CPU time counts
  // against the assert during which it ran (the process's clock), as in a pair of its own.
  const std::string source =
      "import threading\n"
      "def burn():\n"
      "    while True:\n"
      "        pass\n"
      "threading.Thread(target=burn, daemon=True).start()\n"
      "def f(x):\n"
      "    import time\n"
      "    time.sleep(5)\n"
      "    return x\n";
  RunOptions options = Options();
  options.limits.cpu_seconds = 1;
  ProgramResult batched = RunAll(
      source, Asserts({"assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3"}), true, options);
  EXPECT_EQ(Kinds(batched), (std::vector<VerdictKind>{VerdictKind::kTimeout, VerdictKind::kTimeout,
                                                      VerdictKind::kTimeout}));
}

TEST_F(AssertBatch, OffByEnvironmentAndNotForTracedGradedRuns) {
  // EGCA_ASSERT_BATCH=0 turns it off (comparisons); a traced graded run is never batched
  // (its trace is one test's).
  const std::string source = "import os\ndef pid():\n    return os.getpid()\n";
  const std::vector<TestCase> tests =
      Asserts({"assert pid() < 0, pid()", "assert pid() < 0, pid()"});
  setenv("EGCA_ASSERT_BATCH", "0", 1);
  SetAssertBatching(AssertBatching::kFromEnvironment);
  EXPECT_FALSE(AssertBatchingEnabled());
  unsetenv("EGCA_ASSERT_BATCH");
  EXPECT_TRUE(AssertBatchingEnabled());
  SetAssertBatching(AssertBatching::kOn);
  RunOptions traced = Options();
  traced.trace_mode = TraceMode::kNative;
  StatusOr<ProgramResult> r = executor_->RunAll(source, tests, traced);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tests.size(), 2u);
  EXPECT_NE(r->tests[0].verdict.message, r->tests[1].verdict.message);
}

}  // namespace
}  // namespace egca::tracer
