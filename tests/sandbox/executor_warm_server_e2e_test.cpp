// The executor's fork server runs trusted sample tests in its own interpreter before it
// forks children (ExerciseChildPath), so that children inherit resolved symbols and
// quickened bytecode. Nothing of those samples may be visible to a candidate: no leftover
// functions, modules, output or random state; and every run starts from the same state.
#include <string>

#include <gtest/gtest.h>

#include "egca/sandbox/verdict.h"
#include "egca/tracer/executor.h"
#include "egca/tracer/test_case.h"

namespace egca::sandbox {
namespace {

using tracer::Executor;
using tracer::ExecutorOptions;
using tracer::RunOptions;
using tracer::TestCase;

// Unfreezes the warm heap (gc.get_objects() does not list the permanent generation) and
// looks for anything the server's sample tests could have left behind.
constexpr char kInspect[] = R"(import gc, sys, random
gc.unfreeze()
gc.collect()
functions = sorted({o.__name__ for o in gc.get_objects()
                    if type(o).__name__ == "function"
                    and o.__code__.co_filename == "<candidate>"})
print(random.random())
print([name for name in functions if not name.startswith("<")])
print([m for m in ("_egca_harness", "__candidate__", "typing") if m in sys.modules])
print([n for n in ("add", "total", "f", "check", "METADATA", "n") if hasattr(__builtins__, n)])
)";

// random.seed(0); random.random() in CPython 3.11.
constexpr char kExpected[] = "0.8444218515250481\n[]\n['typing']\n[]\n";

TEST(SandboxExecutorWarmServer, ChildrenSeeNothingOfTheServersSampleRuns) {
  auto executor = Executor::Create({});
  ASSERT_TRUE(executor.ok()) << executor.status().ToString();
  RunOptions options;
  for (int run = 0; run < 3; ++run) {  // the same state every time
    auto result = (*executor)->Run(kInspect, TestCase::Stdio("", kExpected), options);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_EQ(result->verdict.kind, VerdictKind::kOk)
        << "stdout: " << result->stdout_data << "\nstderr: " << result->stderr_data;
    EXPECT_EQ(result->stdout_data, kExpected);
    EXPECT_EQ(result->stderr_data, "");
  }
}

TEST(SandboxExecutorWarmServer, SamplesImportNothingBeyondThePreloadedModules) {
  // No preloaded modules at all: the sample runs must not have imported typing or any
  // other module a candidate would otherwise import itself (the harness itself needs
  // json, re and what they import).
  ExecutorOptions bare;
  bare.preload_modules = {};
  auto executor = Executor::Create(bare);
  ASSERT_TRUE(executor.ok()) << executor.status().ToString();
  auto result = (*executor)->Run(
      "import sys\nprint(sorted(m for m in ('typing', 'decimal', 'fractions', 'statistics', "
      "'hashlib', 'string') if m in sys.modules))\n",
      TestCase::Stdio("", "[]\n"), RunOptions{});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->verdict.kind, VerdictKind::kOk)
      << "stdout=" << result->stdout_data << " actual=" << result->verdict.actual
      << " detail=" << result->verdict.detail << " msg=" << result->verdict.message
      << " stderr=" << result->stderr_data;
}

TEST(SandboxExecutorWarmServer, RunsReportPhasesAndFaults) {
  auto executor = Executor::Create({});
  ASSERT_TRUE(executor.ok()) << executor.status().ToString();
  auto result =
      (*executor)->Run("def f():\n    return 1\n", TestCase::Call("f", "[]", "1"), RunOptions{});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const Verdict& v = result->verdict;
  EXPECT_EQ(v.kind, VerdictKind::kOk);
  EXPECT_GT(v.minor_faults, 0u);
  EXPECT_GT(v.phases.fork, 0);
  EXPECT_GT(v.phases.isolate, 0);
  EXPECT_GT(v.phases.main, 0);
  // The first job of a server waits for its child's fork; the wall time runs from the
  // job's dispatch to the child (isolate: the hand-over and the rest of its isolation).
  EXPECT_LE(v.phases.isolate + v.phases.main + v.phases.exit, v.wall_seconds + 1e-6);
}

}  // namespace
}  // namespace egca::sandbox
