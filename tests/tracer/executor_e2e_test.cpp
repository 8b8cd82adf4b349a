// The executor end to end: warm fork server, sandboxed children, verdicts as the sandbox
// and the harness see them together (limits, early exits, forged records, R_hat).
#include "egca/tracer/executor.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "egca/tracer/trace.pb.h"

namespace egca::tracer {
namespace {

using sandbox::VerdictKind;
using sandbox::VerdictName;

class ExecutorE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto created = Executor::Create({});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    executor_ = std::move(created).value().release();
  }
  static void TearDownTestSuite() {
    delete executor_;
    executor_ = nullptr;
  }
  static RunOptions Options() {
    RunOptions options;
    options.limits.wall_seconds = 5;
    options.limits.cpu_seconds = 5;
    options.limits.memory_bytes = 512ull << 20;
    return options;
  }
  static TestResult Run(const std::string& source, const TestCase& test,
                        const RunOptions& options = Options()) {
    StatusOr<TestResult> result = executor_->Run(source, test, options);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? std::move(result).value() : TestResult{};
  }
  static Executor* executor_;
};

Executor* ExecutorE2E::executor_ = nullptr;

#define EXPECT_VERDICT(result, expected_kind)                                              \
  EXPECT_EQ(std::string(VerdictName((result).verdict.kind)), VerdictName(expected_kind))   \
      << "detail: " << (result).verdict.detail << " message: " << (result).verdict.message \
      << " stderr: " << (result).stderr_data.substr(0, 500)

TEST_F(ExecutorE2E, CallTestPassesAndFails) {
  const std::string source = "def add(a, b):\n    return a + b\n";
  TestResult ok = Run(source, TestCase::Call("add", "[1, 2]", "3"));
  EXPECT_VERDICT(ok, VerdictKind::kOk);
  EXPECT_EQ(ok.verdict.actual, "3");
  EXPECT_GT(ok.verdict.wall_seconds, 0.0);
  TestResult wrong = Run(source, TestCase::Call("add", "[1, 2]", "4"));
  EXPECT_VERDICT(wrong, VerdictKind::kWrongAnswer);
  EXPECT_EQ(wrong.verdict.expected, "4");
}

// HOME and TMPDIR are the sandbox's private directory: writing there works (programs that
// cache to ~ or tempfile are legitimate) and nothing reaches the real home directory.
TEST_F(ExecutorE2E, HomeIsThePrivateDirectory) {
  const std::string source =
      "import os, tempfile\n"
      "def f():\n"
      "    p = os.path.join(os.path.expanduser('~'), 'egca_home_probe')\n"
      "    with open(p, 'w') as fh:\n"
      "        fh.write('x')\n"
      "    with tempfile.NamedTemporaryFile(dir=None) as t:\n"
      "        t.write(b'y')\n"
      "    return [os.environ['HOME'] == os.environ['TMPDIR'], os.path.exists(p)]\n";
  TestResult r = Run(source, TestCase::Call("f", "[]", "[true, true]"));
  EXPECT_VERDICT(r, VerdictKind::kOk);
  const char* home = std::getenv("HOME");
  ASSERT_NE(home, nullptr);
  EXPECT_NE(std::string(home), "");
  FILE* leaked = std::fopen((std::string(home) + "/egca_home_probe").c_str(), "r");
  EXPECT_EQ(leaked, nullptr) << "the candidate's write reached the real $HOME";
  if (leaked != nullptr) std::fclose(leaked);
}

TEST_F(ExecutorE2E, SyntaxAndRuntimeErrorsCarryPositions) {
  TestResult syntax = Run("def f(:\n    pass\n", TestCase::Call("f", "[]"));
  EXPECT_VERDICT(syntax, VerdictKind::kSyntaxError);
  EXPECT_EQ(syntax.verdict.line, 1);
  TestResult runtime = Run("def f(xs):\n    return xs[10]\n", TestCase::Call("f", "[[1, 2]]", "1"));
  EXPECT_VERDICT(runtime, VerdictKind::kRuntimeError);
  EXPECT_EQ(runtime.verdict.error_type, "IndexError");
  EXPECT_EQ(runtime.verdict.line, 2);
  EXPECT_EQ(runtime.verdict.column, 11);
  EXPECT_EQ(runtime.verdict.end_column, 17);
}

TEST_F(ExecutorE2E, StdioProgramWithExit) {
  const std::string source =
      "import sys\nn = int(sys.stdin.readline())\nprint(n * n)\nsys.exit(0)\n";
  TestResult r = Run(source, TestCase::Stdio("12\n", "144\n"));
  EXPECT_VERDICT(r, VerdictKind::kOk);
  EXPECT_EQ(r.stdout_data, "144\n");
}

TEST_F(ExecutorE2E, InfiniteLoopIsTimeout) {
  RunOptions options = Options();
  options.limits.wall_seconds = 1;
  options.limits.cpu_seconds = 1;
  TestResult r =
      Run("def f():\n    while True:\n        pass\n", TestCase::Call("f", "[]"), options);
  EXPECT_VERDICT(r, VerdictKind::kTimeout);
}

TEST_F(ExecutorE2E, HugeAllocationIsMemoryLimit) {
  RunOptions options = Options();
  options.limits.memory_bytes = 256ull << 20;
  TestResult r = Run("def f():\n    x = [0] * (10 ** 9)\n    return len(x)\n",
                     TestCase::Call("f", "[]"), options);
  EXPECT_VERDICT(r, VerdictKind::kMemoryLimit);
}

TEST_F(ExecutorE2E, EarlyExitBeforeTheTestIsNotAPass) {
  const std::string test = "assert add(1, 2) == 3\n";
  TestResult os_exit =
      Run("import os\ndef add(a, b):\n    return a + b\nos._exit(0)\n", TestCase::Asserts(test));
  EXPECT_VERDICT(os_exit, VerdictKind::kKilled);
  TestResult sys_exit =
      Run("import sys\ndef add(a, b):\n    return a + b\nsys.exit(0)\n", TestCase::Asserts(test));
  EXPECT_VERDICT(sys_exit, VerdictKind::kKilled);
}

TEST_F(ExecutorE2E, SelfKillIsNotAPass) {
  TestResult r = Run("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
                     TestCase::Asserts("assert True\n"));
  EXPECT_FALSE(r.verdict.passed());
  EXPECT_TRUE(r.verdict.kind == VerdictKind::kKilled || r.verdict.kind == VerdictKind::kViolation)
      << VerdictName(r.verdict.kind);
}

TEST_F(ExecutorE2E, ForgedRecordOnTheResultChannelIsNotAPass) {
  // Writes something record-like to every open descriptor, then leaves before the test.
  const std::string source =
      "import os\n"
      "for fd in range(3, 64):\n"
      "    try:\n"
      "        os.write(fd, bytes([8, 1]))\n"  // ExecResult{outcome: EXEC_OK}
      "    except OSError:\n"
      "        pass\n"
      "os._exit(0)\n";
  TestResult r = Run(source, TestCase::Asserts("assert False\n"));
  EXPECT_FALSE(r.verdict.passed()) << VerdictName(r.verdict.kind);
}

TEST_F(ExecutorE2E, ForkIsViolation) {
  TestResult r = Run("import os\nos.fork()\n", TestCase::Asserts("pass\n"));
  EXPECT_VERDICT(r, VerdictKind::kViolation);
}

TEST_F(ExecutorE2E, RawOutputFloodIsOutputLimit) {
  RunOptions options = Options();
  options.limits.output_bytes = 1 << 20;
  TestResult r =
      Run("import os\nwhile True:\n    os.write(1, b'x' * 65536)\n", TestCase::Stdio(""), options);
  EXPECT_VERDICT(r, VerdictKind::kOutputLimit);
  TestResult printed = Run("while True:\n    print('y' * 1000)\n", TestCase::Stdio(""), options);
  EXPECT_VERDICT(printed, VerdictKind::kOutputLimit);
}

TEST_F(ExecutorE2E, RunAllGivesPassFraction) {
  const std::string source = "def sq(x):\n    return x * x if x < 3 else x\n";
  std::vector<TestCase> tests = {TestCase::Call("sq", "[1]", "1"), TestCase::Call("sq", "[2]", "4"),
                                 TestCase::Call("sq", "[3]", "9")};
  StatusOr<ProgramResult> r = executor_->RunAll(source, tests, Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->passed, 2);
  EXPECT_EQ(r->total, 3);
  EXPECT_DOUBLE_EQ(r->pass_fraction(), 2.0 / 3.0);
  EXPECT_EQ(r->tests[2].verdict.kind, VerdictKind::kWrongAnswer);

  StatusOr<ProgramResult> broken = executor_->RunAll("def sq(x) return x\n", tests, Options());
  ASSERT_TRUE(broken.ok());
  ASSERT_EQ(broken->tests.size(), 3u);
  for (const TestResult& t : broken->tests) EXPECT_EQ(t.verdict.kind, VerdictKind::kSyntaxError);
  EXPECT_EQ(broken->pass_fraction(), 0.0);
}

TEST_F(ExecutorE2E, MbppStyleAssertLinesGiveOneVerdictEach) {
  const std::string source = "def square(x):\n    return x * x if x != 3 else 10\n";
  std::vector<TestCase> tests = TestsFromAssertLines(
      {"assert square(2) == 4", "assert square(3) == 9", "assert square(K) == 16"}, "K = 4");
  StatusOr<ProgramResult> r = executor_->RunAll(source, tests, Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tests.size(), 3u);
  EXPECT_EQ(r->passed, 2);
  EXPECT_EQ(r->tests[1].verdict.error_type, "AssertionError");
  EXPECT_EQ(r->tests[1].verdict.detail, "test line 1: assert square(3) == 9");
}

TEST_F(ExecutorE2E, MalformedTestIsAnError) {
  StatusOr<TestResult> r =
      executor_->Run("def f():\n    return 1\n", TestCase::Call("f", "[oops"), Options());
  EXPECT_FALSE(r.ok());
}

TEST_F(ExecutorE2E, RunsAreDeterministic) {
  const std::string source =
      "import random\ndef f():\n    return [random.randint(0, 10 ** 9), hash('egca'),"
      " list({'a', 'b', 'c', 'd'})]\n";
  TestResult a = Run(source, TestCase::Call("f", "[]"));
  TestResult b = Run(source, TestCase::Call("f", "[]"));
  EXPECT_VERDICT(a, VerdictKind::kOk);
  EXPECT_EQ(a.verdict.actual, b.verdict.actual);
  // Another fork server (another warm interpreter): the hash secret is the fixed seed, not
  // a random one inherited from whichever server ran the program.
  auto other = Executor::Create({});
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  auto c = (*other)->Run(source, TestCase::Call("f", "[]"), Options());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(a.verdict.actual, c->verdict.actual);
}

TEST_F(ExecutorE2E, PythonSettraceBaselineCounts) {
  RunOptions options = Options();
  options.trace_mode = TraceMode::kPythonSettrace;
  TestResult r = Run("def f(n):\n    s = 0\n    for i in range(n):\n        s += i\n    return s\n",
                     TestCase::Call("f", "[3]", "3"), options);
  EXPECT_VERDICT(r, VerdictKind::kOk);
  EXPECT_EQ(r.settrace_snapshots, 10u);
}

TEST_F(ExecutorE2E, NativeTraceComesBack) {
  RunOptions options = Options();
  options.trace_mode = TraceMode::kNative;
  options.trace.enabled = true;
  TestResult r = Run("def f(n):\n    s = 0\n    for i in range(n):\n        s += i\n    return s\n",
                     TestCase::Call("f", "[3]", "3"), options);
  EXPECT_VERDICT(r, VerdictKind::kOk);
  ASSERT_NE(r.trace, nullptr);
  EXPECT_GT(r.trace->events_size(), 0);
  EXPECT_EQ(r.trace->filename(), "<candidate>");
}

}  // namespace
}  // namespace egca::tracer
