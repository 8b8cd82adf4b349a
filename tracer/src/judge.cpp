#include "judge.h"

#include <fmt/format.h>

namespace egca::tracer {

Judgement JudgeCall(const proto::ExecResult& completion, const PlainValue* expected, double rel,
                    double abs_tolerance, size_t max_report_bytes, bool apps_allclose) {
  Judgement j;
  PlainValue actual;
  std::string error;
  bool plain = false;
  if (completion.has_value()) {
    plain = DecodePlainValue(completion.value(), &actual, &error);
    if (!plain) error = "the child sent a malformed value: " + error;
  } else {
    error = fmt::format("returned a {}, not a plain value",
                        completion.value_type().empty() ? "value" : completion.value_type());
  }
  // Shown as the program's value: the parent's rendering of plain data, else the child's
  // own repr (display only).
  j.actual = BoundedText(plain ? PythonRepr(actual, max_report_bytes + 8) : completion.actual(),
                         max_report_bytes);
  if (expected == nullptr) {
    j.passed = true;
    return j;
  }
  j.passed = plain && ReturnedValueMatches(actual, *expected, rel, abs_tolerance, apps_allclose);
  if (!j.passed) {
    j.expected = BoundedText(PythonRepr(*expected, max_report_bytes + 8), max_report_bytes);
    if (!plain) j.detail = BoundedText(error, max_report_bytes);
  }
  return j;
}

Judgement JudgeStdio(std::string_view stdout_data, const std::string* expected, double rel,
                     double abs_tolerance, size_t max_report_bytes, bool apps_allclose) {
  Judgement j;
  j.actual = BoundedText(stdout_data, max_report_bytes);
  if (expected == nullptr) {
    j.passed = true;
    return j;
  }
  if (const char* rule = StdoutMatches(stdout_data, *expected, rel, abs_tolerance, apps_allclose)) {
    j.passed = true;
    j.detail = std::string("matched: ") + rule;
    return j;
  }
  j.expected = BoundedText(*expected, max_report_bytes);
  return j;
}

}  // namespace egca::tracer
