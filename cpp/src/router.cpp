#include "egca/cpp/router.h"

#include <fmt/format.h>

#include <chrono>

#include "egca/core/span.h"

namespace egca::cpp {

using sandbox::VerdictKind;

StatusOr<gates::RouteResult> CppRouter::Route(std::string_view candidate,
                                              const gates::Problem& problem) {
  gates::RouteResult out;
  auto start = std::chrono::steady_clock::now();
  // The C++ constraint checkers read the source; the CFG argument is Python's (empty).
  for (const auto& c : problem.constraints) {
    if (auto violation = c->Violation(candidate, cfg::ProgramCfg{})) {
      if (violation->constraint.empty()) violation->constraint = c->name();
      out.constraint_violations.push_back(std::move(*violation));
    }
  }
  EGCA_ASSIGN_OR_RETURN(out.grading, executor_->RunAll(candidate, problem.tests, options_.run));
  out.grade_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.pass_fraction = out.grading.pass_fraction();
  for (size_t i = 0; i < out.grading.tests.size(); ++i) {
    if (!out.grading.tests[i].verdict.passed()) {
      out.first_failing_test = static_cast<int32_t>(i);
      break;
    }
  }
  const LineIndex lines(candidate);
  for (const tracer::TestResult& t : out.grading.tests) {
    const sandbox::Verdict& v = t.verdict;
    const bool compile_error = v.kind == VerdictKind::kSyntaxError;
    // Every RUNTIME_ERROR of egca::cpp is the candidate's own failure (a test's failure is
    // WRONG_ANSWER).
    const bool raised = v.kind == VerdictKind::kRuntimeError && !options_.runtime_error_is_logic;
    if (!compile_error && !raised) continue;
    out.mode = gates::FailureMode::kSyntax;
    out.error_message = v.error_type + (v.message.empty() ? "" : ": " + v.message);
    if (v.line > 0 && v.line <= lines.line_count()) out.error_span = lines.LineSpan(v.line);
    out.reason = compile_error ? "does not compile" : "fails at run time: " + v.error_type;
    return out;
  }
  out.constraints_satisfied = out.constraint_violations.empty();
  out.reward = out.pass_fraction * (out.constraints_satisfied ? 1.0 : 0.0);
  if (!out.constraints_satisfied) {
    out.mode = gates::FailureMode::kConstraint;
    out.reason = "violates " + out.constraint_violations.front().ToString();
    return out;
  }
  if (out.grading.all_passed()) {
    out.mode = gates::FailureMode::kCorrect;
    out.reason = "passes every test";
    return out;
  }
  out.mode = gates::FailureMode::kLogic;
  if (out.first_failing_test < 0) {
    out.reason = "no tests";
    return out;
  }
  const tracer::TestResult& failing = out.grading.tests[out.first_failing_test];
  out.reason = fmt::format("fails test {} ({})", out.first_failing_test + 1,
                           sandbox::VerdictName(failing.verdict.kind));
  out.localization_note = "C++ localization (per-statement snapshots) is not implemented yet";
  return out;
}

}  // namespace egca::cpp
