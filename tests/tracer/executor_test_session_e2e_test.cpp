// The reused test process (tracer/src/test_session.h): one test process serves the assert
// tests of an executor one after the other. What one test leaves behind must not reach
// the next; a test process that dies or hangs is replaced; the verdicts are those of a
// fresh test process per test.
#include <gtest/gtest.h>

#include <string>

#include "common/shared_executor.h"
#include "egca/sandbox/verdict.h"
#include "egca/tracer/executor.h"
#include "egca/tracer/test_case.h"

namespace egca::tracer {
namespace {

using sandbox::VerdictKind;
using sandbox::VerdictName;

class TestSession : public egca::testing::SharedExecutorTest {
 protected:
  static RunOptions Options() {
    RunOptions options;
    // Generous: nothing here may depend on the machine's speed; the hang test waits for
    // the wall limit once.
    options.limits.wall_seconds = 20;
    options.limits.cpu_seconds = 10;
    return options;
  }
  static TestResult Run(const std::string& source, const std::string& asserts,
                        const RunOptions& options = Options()) {
    StatusOr<TestResult> result = executor_->Run(source, TestCase::Asserts(asserts), options);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? std::move(result).value() : TestResult{};
  }
  static std::string Describe(const TestResult& r) {
    return std::string(VerdictName(r.verdict.kind)) + " " + r.verdict.error_type + ": " +
           r.verdict.message + " [" + r.verdict.detail + "]";
  }
  // The test process's pid, as a failing assert's message reports it.
  static std::string TestProcessPid(const RunOptions& options = Options()) {
    TestResult r =
        Run("def f():\n    return 1\n",
            "import os\nassert f() == 1\nassert False, 'pid %d' % os.getpid()\n", options);
    EXPECT_EQ(r.verdict.kind, VerdictKind::kRuntimeError) << Describe(r);
    return r.verdict.message;
  }
  static constexpr const char* kProgram = "def f(x):\n    return x + 1\n";
};

TEST_F(TestSession, OneTestProcessServesTestAfterTest) {
  const std::string first = TestProcessPid();
  ASSERT_NE(first.find("pid "), std::string::npos) << first;
  EXPECT_EQ(Run(kProgram, "assert f(1) == 2\n").verdict.kind, VerdictKind::kOk);
  EXPECT_EQ(TestProcessPid(), first);
  // Without reuse, a fresh process per test.
  RunOptions fresh = Options();
  fresh.reuse_test_process = false;
  const std::string a = TestProcessPid(fresh);
  const std::string b = TestProcessPid(fresh);
  EXPECT_NE(a, b);
  EXPECT_NE(a, first);
}

TEST_F(TestSession, WhatATestChangesDoesNotReachTheNext) {
  // Every kind of state a test's code can change in its process...
  TestResult dirty = Run(kProgram,
                         "import sys, os, builtins, gc, xml.dom.minidom\n"
                         "assert f(1) == 2\n"
                         "builtins.leftover = 1\n"
                         "builtins.len = lambda x: 7\n"
                         "sys.setrecursionlimit(60)\n"
                         "sys.leftover_attr = 2\n"
                         "sys.stdout = None\n"
                         "open('left_behind.txt', 'w').write('x')\n"
                         "os.mkdir('left_dir')\n"
                         "gc.disable()\n");
  ASSERT_EQ(dirty.verdict.kind, VerdictKind::kOk) << Describe(dirty);
  // ... is as a fresh process has it in the next test.
  TestResult clean = Run(kProgram,
                         "import sys, os, builtins, gc\n"
                         "assert 'xml.dom.minidom' not in sys.modules\n"
                         "assert not hasattr(builtins, 'leftover')\n"
                         "assert len([1, 2]) == 2\n"
                         "assert sys.getrecursionlimit() > 60\n"
                         "assert not hasattr(sys, 'leftover_attr')\n"
                         "assert sys.stdout is not None\n"
                         "assert os.listdir('.') == [], os.listdir('.')\n"
                         "assert gc.isenabled()\n"
                         "assert f(2) == 3\n");
  EXPECT_EQ(clean.verdict.kind, VerdictKind::kOk) << Describe(clean);
}

TEST_F(TestSession, ATestProcessThatDiesIsReplaced) {
  const std::string before = TestProcessPid();
  TestResult died = Run(kProgram, "import os\nassert f(1) == 2\nos._exit(3)\n");
  EXPECT_FALSE(died.verdict.passed()) << Describe(died);
  EXPECT_EQ(Run(kProgram, "assert f(1) == 2\n").verdict.kind, VerdictKind::kOk);
  EXPECT_NE(TestProcessPid(), before);
}

TEST_F(TestSession, ATestProcessThatHangsIsATimeoutAndIsReplaced) {
  const std::string before = TestProcessPid();
  RunOptions short_wall = Options();
  short_wall.limits.wall_seconds = 2;  // the loop below never ends: the limit decides
  TestResult hung = Run(kProgram, "assert f(1) == 2\nwhile True:\n    pass\n", short_wall);
  EXPECT_EQ(hung.verdict.kind, VerdictKind::kTimeout) << Describe(hung);
  EXPECT_EQ(Run(kProgram, "assert f(1) == 2\n").verdict.kind, VerdictKind::kOk);
  EXPECT_NE(TestProcessPid(), before);
}

TEST_F(TestSession, ACandidateThatHangsDoesNotCostTheTestProcess) {
  const std::string before = TestProcessPid();
  RunOptions short_wall = Options();
  short_wall.limits.wall_seconds = 2;
  short_wall.limits.cpu_seconds = 1;
  TestResult hung =
      Run("def f(x):\n    while True:\n        pass\n", "assert f(1) == 2\n", short_wall);
  EXPECT_EQ(hung.verdict.kind, VerdictKind::kTimeout) << Describe(hung);
  // The test process saw its candidate's channel close, answered, and goes on serving.
  EXPECT_EQ(TestProcessPid(), before);
}

TEST_F(TestSession, OtherProcessLimitsStartAnotherTestProcess) {
  const std::string before = TestProcessPid();
  RunOptions other = Options();
  other.limits.memory_bytes = 1536ull << 20;
  EXPECT_NE(TestProcessPid(other), before);
}

TEST_F(TestSession, AMalformedTestDoesNotEndTheSession) {
  const std::string before = TestProcessPid();
  StatusOr<TestResult> bad = executor_->Run(kProgram, TestCase::Asserts("assert (\n"), Options());
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(TestProcessPid(), before);
}

}  // namespace
}  // namespace egca::tracer
