// The parent's judgement of a completed run: the returned value of a call test or the
// stdout of a stdin/stdout test against the expected one, with APPS conventions
// (plain_value.h). Runs in the caller's process, never in one that ran candidate code;
// the child's record is read as plain data only.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "egca/tracer/exec.pb.h"
#include "plain_value.h"

namespace egca::tracer {

struct Judgement {
  bool passed = false;
  std::string actual;    // bounded repr / text of what the program produced
  std::string expected;  // bounded repr / text of what was expected (when it failed)
  std::string detail;    // the stdout rule that matched, or why the value failed
};

// A call test's completion record (its `value`, or `value_type` when the program returned
// something that is not plain data). `expected` null: nothing to compare, any completed
// run passes.
Judgement JudgeCall(const proto::ExecResult& completion, const PlainValue* expected, double rel,
                    double abs_tolerance, size_t max_report_bytes, bool apps_allclose = false);

// A stdin/stdout test: `stdout_data` as the sandbox captured it from file descriptor 1.
// `expected` null: nothing to compare.
Judgement JudgeStdio(std::string_view stdout_data, const std::string* expected, double rel,
                     double abs_tolerance, size_t max_report_bytes, bool apps_allclose = false);

}  // namespace egca::tracer
