#include "egca/cpp/router.h"

#include <fmt/format.h>

#include <chrono>

#include "egca/core/span.h"

namespace egca::cpp {

using sandbox::VerdictKind;

StatusOr<CppRouteResult> CppRouter::Route(std::string_view candidate,
                                          const gates::Problem& problem) {
  return Route(candidate, problem, options_);
}

StatusOr<CppRouteResult> CppRouter::Route(std::string_view candidate, const gates::Problem& problem,
                                          const CppRouterOptions& options) {
  CppRouteResult result;
  gates::RouteResult& out = result.route;
  auto start = std::chrono::steady_clock::now();
  // The C++ constraint checkers read the source; the CFG argument is Python's (empty).
  for (const auto& c : problem.constraints) {
    if (auto violation = c->Violation(candidate, cfg::ProgramCfg{})) {
      if (violation->constraint.empty()) violation->constraint = c->name();
      out.constraint_violations.push_back(std::move(*violation));
    }
  }
  EGCA_ASSIGN_OR_RETURN(out.grading, executor_->RunAll(candidate, problem.tests, options.run));
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
    const bool raised = v.kind == VerdictKind::kRuntimeError && !options.runtime_error_is_logic;
    if (!compile_error && !raised) continue;
    out.mode = gates::FailureMode::kSyntax;
    out.error_message = v.error_type + (v.message.empty() ? "" : ": " + v.message);
    if (v.line > 0 && v.line <= lines.line_count()) out.error_span = lines.LineSpan(v.line);
    out.reason = compile_error ? "does not compile" : "fails at run time: " + v.error_type;
    return result;
  }
  out.constraints_satisfied = out.constraint_violations.empty();
  out.reward = out.pass_fraction * (out.constraints_satisfied ? 1.0 : 0.0);
  // I_cmp on the Clang CFGs (after SYNTAX: a program that does not compile has none).
  if (options.check_comparability && !problem.reference.empty()) {
    auto ref = reference_cfgs_.find(problem.reference);
    if (ref == reference_cfgs_.end()) {
      auto analysed = AnalyzeCpp(problem.reference);
      ref = reference_cfgs_.emplace(problem.reference, analysed.ok() ? *analysed : nullptr).first;
    }
    auto cand = AnalyzeCpp(candidate);
    if (ref->second != nullptr && cand.ok()) {
      out.comparability =
          cfg::CompareStructure((*cand)->program, ref->second->program, options.structure);
    }
  }
  const bool not_comparable = out.comparability && !out.comparability->comparable;
  if (options.passing_bypasses_gates && out.grading.all_passed()) {
    out.mode = gates::FailureMode::kCorrect;
    out.reward = out.pass_fraction;
    out.reason = !out.constraints_satisfied || not_comparable
                     ? "passes every test (the static gates are bypassed)"
                     : "passes every test";
    return result;
  }
  if (!out.constraints_satisfied) {
    out.mode = gates::FailureMode::kConstraint;
    out.reason = "violates " + out.constraint_violations.front().ToString();
    return result;
  }
  if (not_comparable) {
    out.mode = gates::FailureMode::kConstraint;
    out.reason = fmt::format("not comparable to the reference (similarity {:.3f} < {:.2f})",
                             out.comparability->score, out.comparability->threshold);
    return result;
  }
  if (out.grading.all_passed()) {
    out.mode = gates::FailureMode::kCorrect;
    out.reason = "passes every test";
    return result;
  }
  out.mode = gates::FailureMode::kLogic;
  if (out.first_failing_test < 0) {
    out.reason = "no tests";
    return result;
  }
  const tracer::TestResult& failing = out.grading.tests[out.first_failing_test];
  out.reason = fmt::format("fails test {} ({})", out.first_failing_test + 1,
                           sandbox::VerdictName(failing.verdict.kind));
  if (!options.localize) return result;
  if (problem.reference.empty()) {
    out.localization_note = "no reference to localize against";
    return result;
  }
  const tracer::TestCase& test = problem.tests[out.first_failing_test];
  auto start_trace = std::chrono::steady_clock::now();
  EGCA_ASSIGN_OR_RETURN(auto cand, executor_->RunTraced(candidate, test, options.run,
                                                        options.max_events));
  const std::string key = problem.reference + "\x1f" + TestCodeOf(test);
  auto it = reference_traces_.find(key);
  if (it == reference_traces_.end()) {
    EGCA_ASSIGN_OR_RETURN(auto ref, executor_->RunTraced(problem.reference, test, options.run,
                                                         options.max_events));
    if (!ref.note.empty()) {
      out.localization_note = "reference: " + ref.note;
      return result;
    }
    it = reference_traces_.emplace(key, std::move(ref.trace)).first;
  }
  result.trace_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_trace).count();
  out.localize_seconds = result.trace_seconds;
  if (!cand.note.empty()) {
    out.localization_note = "candidate: " + cand.note;
    return result;
  }
  CppLocalization loc =
      Localize(std::string(candidate), problem.reference, cand.trace, it->second, options.seed);
  out.earliest_divergence = loc.earliest.span;
  out.last_divergence = loc.last.span;
  out.random_boundary = loc.random_boundary;
  out.localization_note = loc.note;
  out.divergence = ToDivergenceReport(std::string(candidate), problem.reference, cand.trace,
                                      it->second, loc);
  result.localization = std::move(loc);
  return result;
}

}  // namespace egca::cpp
