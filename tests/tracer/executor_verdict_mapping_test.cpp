// MapVerdict: sandbox outcome + completion record -> verdict, without a sandbox.
#include <gtest/gtest.h>

#include <csignal>

#include "result_mapping.h"

namespace egca::tracer {
namespace {

using sandbox::ChildOutcome;
using sandbox::Limits;
using sandbox::Termination;
using sandbox::VerdictKind;

sandbox::Verdict Map(const ChildOutcome& outcome, const proto::ExecResult* record,
                     const Limits& limits = Limits()) {
  StatusOr<sandbox::Verdict> v = MapVerdict(outcome, record, limits);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : sandbox::Verdict{};
}

proto::ExecResult Record(proto::ExecOutcome outcome) {
  proto::ExecResult r;
  r.set_outcome(outcome);
  return r;
}

TEST(ExecutorVerdictMapping, RecordOutcomes) {
  ChildOutcome exited;
  struct Case {
    proto::ExecOutcome outcome;
    VerdictKind kind;
  };
  for (const Case& c : {Case{proto::EXEC_OK, VerdictKind::kOk},
                        Case{proto::EXEC_WRONG_ANSWER, VerdictKind::kWrongAnswer},
                        Case{proto::EXEC_SYNTAX_ERROR, VerdictKind::kSyntaxError},
                        Case{proto::EXEC_RUNTIME_ERROR, VerdictKind::kRuntimeError},
                        Case{proto::EXEC_MEMORY_ERROR, VerdictKind::kMemoryLimit},
                        Case{proto::EXEC_OUTPUT_LIMIT, VerdictKind::kOutputLimit},
                        Case{proto::EXEC_EXITED, VerdictKind::kKilled},
                        Case{proto::EXEC_OUTCOME_UNSPECIFIED, VerdictKind::kKilled}}) {
    proto::ExecResult record = Record(c.outcome);
    EXPECT_EQ(Map(exited, &record).kind, c.kind) << proto::ExecOutcome_Name(c.outcome);
  }
}

TEST(ExecutorVerdictMapping, RecordFieldsAndResourceUsageAreCopied) {
  ChildOutcome outcome;
  outcome.wall_seconds = 0.25;
  outcome.cpu_seconds = 0.125;
  outcome.max_rss_bytes = 1234;
  proto::ExecResult record = Record(proto::EXEC_RUNTIME_ERROR);
  record.set_error_type("ZeroDivisionError");
  record.set_message("division by zero");
  record.set_line(3);
  record.set_column(4);
  record.set_end_line(3);
  record.set_end_column(9);
  sandbox::Verdict v = Map(outcome, &record);
  EXPECT_EQ(v.error_type, "ZeroDivisionError");
  EXPECT_EQ(v.message, "division by zero");
  EXPECT_EQ(v.line, 3);
  EXPECT_EQ(v.column, 4);
  EXPECT_EQ(v.end_column, 9);
  EXPECT_DOUBLE_EQ(v.wall_seconds, 0.25);
  EXPECT_DOUBLE_EQ(v.cpu_seconds, 0.125);
  EXPECT_EQ(v.max_rss_bytes, 1234u);
}

TEST(ExecutorVerdictMapping, ServerLimitsWinOverARecord) {
  proto::ExecResult ok = Record(proto::EXEC_OK);
  ChildOutcome outcome;
  outcome.termination = Termination::kWallTimeout;
  EXPECT_EQ(Map(outcome, &ok).kind, VerdictKind::kTimeout);
  outcome.termination = Termination::kCpuTimeout;
  EXPECT_EQ(Map(outcome, nullptr).kind, VerdictKind::kTimeout);
  outcome.termination = Termination::kOutputLimit;
  EXPECT_EQ(Map(outcome, &ok).kind, VerdictKind::kOutputLimit);
  outcome.termination = Termination::kViolation;
  outcome.violation = "fork";
  sandbox::Verdict v = Map(outcome, &ok);
  EXPECT_EQ(v.kind, VerdictKind::kViolation);
  EXPECT_EQ(v.detail, "fork");
  EXPECT_EQ(v.signal, SIGSYS);
}

TEST(ExecutorVerdictMapping, NoRecordMeansTheTestDidNotComplete) {
  ChildOutcome clean_exit;  // exit code 0, but no record: os._exit(0) before the test
  sandbox::Verdict v = Map(clean_exit, nullptr);
  EXPECT_EQ(v.kind, VerdictKind::kKilled);
  EXPECT_EQ(v.detail, "exited with code 0 before the test completed");

  ChildOutcome signaled;
  signaled.termination = Termination::kSignaled;
  signaled.signal = SIGSEGV;
  v = Map(signaled, nullptr);
  EXPECT_EQ(v.kind, VerdictKind::kKilled);
  EXPECT_EQ(v.signal, SIGSEGV);
  EXPECT_EQ(v.detail, "killed by SIGSEGV before the test completed");
}

TEST(ExecutorVerdictMapping, DeathNearTheMemoryLimitIsMemoryLimit) {
  Limits limits;
  limits.memory_bytes = 1000ull << 20;
  ChildOutcome outcome;
  outcome.termination = Termination::kSignaled;
  outcome.signal = SIGKILL;
  outcome.max_rss_bytes = 900ull << 20;  // 90% >= kNearMemoryLimit
  EXPECT_EQ(Map(outcome, nullptr, limits).kind, VerdictKind::kMemoryLimit);
  outcome.max_rss_bytes = 100ull << 20;
  EXPECT_EQ(Map(outcome, nullptr, limits).kind, VerdictKind::kKilled);
  ChildOutcome exited;
  exited.exit_code = 1;
  exited.stderr_data = "Traceback ...\nMemoryError\n";
  EXPECT_EQ(Map(exited, nullptr, limits).kind, VerdictKind::kMemoryLimit);
}

TEST(ExecutorVerdictMapping, MalformedTestIsAnError) {
  proto::ExecResult record = Record(proto::EXEC_TEST_ERROR);
  record.set_message("arguments are not valid JSON");
  StatusOr<sandbox::Verdict> v = MapVerdict(ChildOutcome(), &record, Limits());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(v.status().message().find("arguments are not valid JSON"), std::string::npos);
}

}  // namespace
}  // namespace egca::tracer
