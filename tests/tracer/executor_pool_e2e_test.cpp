// ExecutorPool: programs spread over two workers come back in job order with their own
// verdicts; a malformed job's error does not stop the others.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "egca/tracer/executor.h"

namespace egca::tracer {
namespace {

TEST(ExecutorPool, RunBatchKeepsJobOrder) {
  auto pool = ExecutorPool::Create({}, 2);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ((*pool)->workers(), 2);
  std::vector<ProgramJob> jobs;
  for (int i = 0; i < 12; ++i) {
    // Job i returns i; odd jobs are tested against the wrong value.
    std::string source = "def f():\n    return " + std::to_string(i) + "\n";
    std::string expected = std::to_string(i % 2 == 0 ? i : i + 100);
    jobs.push_back({source, {TestCase::Call("f", "[]", expected)}});
  }
  jobs.push_back({"def f():\n    return 1\n", {TestCase::Call("f", "[not json")}});
  RunOptions options;
  options.limits.wall_seconds = 5;
  std::vector<StatusOr<ProgramResult>> results = (*pool)->RunBatch(jobs, options);
  ASSERT_EQ(results.size(), jobs.size());
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status().ToString();
    EXPECT_EQ(results[i]->tests[0].verdict.actual, std::to_string(i));
    EXPECT_EQ(results[i]->all_passed(), i % 2 == 0) << "job " << i;
  }
  EXPECT_FALSE(results[12].ok());
  EXPECT_FALSE(ExecutorPool::Create({}, 0).ok());
}

}  // namespace
}  // namespace egca::tracer
