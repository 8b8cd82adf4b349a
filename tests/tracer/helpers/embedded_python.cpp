#include "embedded_python.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>

#include "child_main.h"
#include "judge.h"
#include "plain_value.h"
#include "egca/tracer/executor.h"
#include "python_runtime.h"

namespace egca::tracer::testing {

void EnsureEmbeddedPython() {
  InterpreterOptions options;
  options.preload_modules = DefaultPreloadModules();
  Status status = InitializeInterpreter(options);
  ASSERT_TRUE(status.ok()) << status.ToString();
}

proto::ExecResult RunInProcess(const proto::ExecRequest& request, const Expected& expected,
                               std::string* stdout_data) {
  EnsureEmbeddedPython();
  proto::ExecRequest copy = request;
  if (copy.max_report_bytes() == 0) copy.set_max_report_bytes(2048);
  // The program prints to descriptor 1, which the sandbox would capture: a memfd here.
  std::fflush(stdout);
  const int saved = dup(1);
  const int capture = memfd_create("egca-test-stdout", MFD_CLOEXEC);
  EXPECT_TRUE(saved >= 0 && capture >= 0 && dup2(capture, 1) == 1);
  proto::ExecResult prepared;
  proto::ExecResult result = RunRequestInProcess(
      copy, [&](const proto::ExecResult& p) { prepared = p; });
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  std::string printed;
  char buf[65536];
  for (off_t at = 0;;) {
    ssize_t n = pread(capture, buf, sizeof(buf), at);
    if (n <= 0) break;
    printed.append(buf, static_cast<size_t>(n));
    at += n;
  }
  close(capture);
  if (stdout_data != nullptr) *stdout_data = printed;
  if (prepared.outcome() == proto::EXEC_TEST_ERROR) return prepared;
  if (result.outcome() != proto::EXEC_OK || copy.kind() == proto::TEST_KIND_ASSERT) return result;
  Judgement j;
  if (copy.kind() == proto::TEST_KIND_CALL) {
    PlainValue value;
    if (expected.json != nullptr) {
      if (!ParsePythonJson(*expected.json, &value)) {
        result.set_outcome(proto::EXEC_TEST_ERROR);
        result.set_message("expected value is not valid JSON");
        return result;
      }
    }
    j = JudgeCall(result, expected.json != nullptr ? &value : nullptr, 1e-5, 1e-8,
                  copy.max_report_bytes());
  } else {
    j = JudgeStdio(printed, expected.stdout_text, 1e-5, 1e-8, copy.max_report_bytes());
  }
  result.set_outcome(j.passed ? proto::EXEC_OK : proto::EXEC_WRONG_ANSWER);
  result.set_actual(j.actual);
  result.set_expected(j.expected);
  if (!j.detail.empty()) result.set_detail(j.detail);
  return result;
}

std::string DataPath(const std::string& relative) {
  return std::string(EGCA_DATA_DIR) + "/" + relative;
}

}  // namespace egca::tracer::testing
