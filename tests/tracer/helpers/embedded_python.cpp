#include "embedded_python.h"

#include <gtest/gtest.h>

#include "child_main.h"
#include "egca/tracer/executor.h"
#include "python_runtime.h"

namespace egca::tracer::testing {

void EnsureEmbeddedPython() {
  InterpreterOptions options;
  options.preload_modules = DefaultPreloadModules();
  Status status = InitializeInterpreter(options);
  ASSERT_TRUE(status.ok()) << status.ToString();
}

proto::ExecResult RunInProcess(const proto::ExecRequest& request) {
  EnsureEmbeddedPython();
  proto::ExecRequest copy = request;
  if (copy.max_report_bytes() == 0) copy.set_max_report_bytes(2048);
  if (copy.output_limit_bytes() == 0) copy.set_output_limit_bytes(1 << 20);
  if (copy.float_rel_tolerance() == 0) copy.set_float_rel_tolerance(1e-5);
  if (copy.float_abs_tolerance() == 0) copy.set_float_abs_tolerance(1e-8);
  return RunRequestInProcess(copy);
}

std::string DataPath(const std::string& relative) {
  return std::string(EGCA_DATA_DIR) + "/" + relative;
}

}  // namespace egca::tracer::testing
