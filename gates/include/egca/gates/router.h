// Failure-mode router m(y) (EGCA section 3.5, eq. 5, appendix D.2), in priority order:
//   SYNTAX      y does not compile, or raises at run time (span: the compiler's location,
//               or the statement the interpreter was executing when the exception escaped)
//   CONSTRAINT  I_C(y) = 0 (a constraint checker rejects it) or I_cmp(y) = 0 (its CFG is
//               not comparable to the reference's, egca::cfg::CompareStructure)
//   CORRECT     R_hat(y) = 1 and I_C(y) = 1
//   LOGIC       otherwise; the earliest divergence against the reference is localized on
//               the first failing test (egca::diff), plus the last divergence and a seeded
//               random executed boundary (the paper's ablation targets).
// R_hat = fraction of tests passed; R(y) = R_hat(y) * I_C(y).
//
// Cost: every test runs untraced (grading); only a LOGIC sample's first failing test is
// traced, and the reference's trace of a test is computed once per (reference, test) and
// kept in a ReferenceCache shared by every candidate of the problem.
//
// A time limit is not an exception of the program: a timed-out candidate goes through the
// CONSTRAINT gate like any wrong answer and, if LOGIC, is localized from a bounded trace
// (the traced re-run is stopped by an alarm after `bounded_trace_seconds`).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "egca/cfg/cfg.h"
#include "egca/cfg/structure.h"
#include "egca/core/span.h"
#include "egca/core/status.h"
#include "egca/credit/token_credit.h"
#include "egca/diff/divergence.h"
#include "egca/tracer/executor.h"
#include "egca/tracer/test_case.h"

namespace egca::gates {

// One vocabulary with the credit operator that consumes the route.
using credit::FailureMode;
using credit::FailureModeName;

// One violated constraint of a candidate: which constraint, why, and where.
struct ConstraintViolation {
  std::string constraint;          // the checker's name(), e.g. "max_loop_depth"
  std::string message;             // one line: why it is violated
  std::optional<SourceSpan> span;  // the offending code in the candidate (absent: the
                                   // whole program, e.g. a missing required property)
  std::string ToString() const;    // "name: message [span]"
};

// I_C(y): an algorithmic constraint on the candidate (e.g. "uses no sort", "O(n) loops"),
// checked statically on its source and CFG. Implementations must be thread-safe.
class ConstraintChecker {
 public:
  virtual ~ConstraintChecker() = default;
  virtual std::string name() const = 0;
  // Empty: satisfied; otherwise why it is violated (constraint = name()).
  virtual std::optional<ConstraintViolation> Violation(std::string_view source,
                                                       const cfg::ProgramCfg& program) const = 0;
};

// A problem: its reference solution, its tests, and its constraints (none: I_C = 1).
struct Problem {
  std::string reference;
  std::vector<tracer::TestCase> tests;
  std::vector<std::shared_ptr<const ConstraintChecker>> constraints;
};

struct RouterOptions {
  tracer::RunOptions run;           // grading: limits, comparison tolerances (trace_mode ignored)
  tracer::TraceOptions trace;       // localization runs (enabled forced on)
  cfg::StructureOptions structure;  // the I_cmp gate
  diff::DivergenceOptions divergence;
  // Eq. 5 (default) routes an exception raised at run time to SYNTAX; the paper's
  // appendix D.2 reads "LOGIC: executes but fails tests". On: run-time errors go to LOGIC.
  bool runtime_error_is_logic = false;
  bool check_comparability = true;
  bool localize = true;  // off: route only
  // A timed-out candidate's traced re-run is stopped after this long (wall seconds).
  double bounded_trace_seconds = 0.25;
  uint64_t bounded_trace_events = 50000;  // event cap of that re-run
};

struct RouteResult {
  FailureMode mode = FailureMode::kCorrect;
  std::string reason;  // one line: why this mode

  double pass_fraction = 0;                         // R_hat
  bool constraints_satisfied = true;                // I_C
  std::vector<ConstraintViolation> constraint_violations;
  std::optional<cfg::Comparability> comparability;  // I_cmp (absent for SYNTAX)
  double reward = 0;                                // R = R_hat * I_C

  tracer::ProgramResult grading;  // per-test verdicts (untraced runs)
  int32_t first_failing_test = -1;

  std::optional<SourceSpan> error_span;  // SYNTAX: in the candidate's source
  std::string error_message;             // SYNTAX: "SyntaxError: ..." / "ZeroDivisionError: ..."

  // LOGIC: the localization on the first failing test (absent if not run or not possible;
  // see localization_note).
  std::optional<diff::DivergenceReport> divergence;
  std::string localization_note;
  std::shared_ptr<const tracer::proto::Trace> candidate_trace;
  std::shared_ptr<const tracer::proto::Trace> reference_trace;

  // The spans the credit operator consumes (LOGIC; copies of divergence's).
  std::optional<SourceSpan> earliest_divergence;
  std::optional<SourceSpan> last_divergence;
  std::optional<SourceSpan> random_boundary;

  double grade_seconds = 0;     // untraced test runs
  double localize_seconds = 0;  // traced runs + alignment
};

// Reference traces and parsed references, keyed by a 64-bit hash of the reference source
// (and of the test for traces). Thread-safe; share one across routers of a problem set.
class ReferenceCache {
 public:
  std::shared_ptr<const tracer::proto::Trace> FindTrace(uint64_t key) const;
  void PutTrace(uint64_t key, std::shared_ptr<const tracer::proto::Trace> trace);
  std::shared_ptr<const diff::PreparedProgram> FindProgram(uint64_t key) const;
  void PutProgram(uint64_t key, std::shared_ptr<const diff::PreparedProgram> program);
  size_t trace_hits() const;
  size_t trace_misses() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<const tracer::proto::Trace>> traces_;
  std::unordered_map<uint64_t, std::shared_ptr<const diff::PreparedProgram>> programs_;
  mutable size_t hits_ = 0, misses_ = 0;
};

// 64-bit FNV-1a of the reference source, and of the source plus every field of the test.
uint64_t ReferenceKey(std::string_view reference);
uint64_t ReferenceTestKey(std::string_view reference, const tracer::TestCase& test);

class Router {
 public:
  // `executor` is borrowed and must outlive the router (one router per thread, as one
  // Executor serves one call at a time). `cache` may be shared; null: a private one.
  Router(tracer::Executor* executor, RouterOptions options,
         std::shared_ptr<ReferenceCache> cache = nullptr);

  // Routes one candidate program. Errors are egca's own (the executor failed, the
  // reference does not parse); a candidate failing in any way is a RouteResult.
  StatusOr<RouteResult> Route(std::string_view candidate, const Problem& problem);

  // The localization step alone (egca-trace): traces `candidate` and the reference on
  // `test` and diffs them. Fills divergence / traces / spans / localization_note.
  Status Localize(std::string_view candidate, const Problem& problem, const tracer::TestCase& test,
                  bool candidate_timed_out, RouteResult* result);

  const RouterOptions& options() const { return options_; }
  ReferenceCache& cache() { return *cache_; }

 private:
  StatusOr<std::shared_ptr<const diff::PreparedProgram>> PreparedReference(
      const std::string& reference);
  StatusOr<std::shared_ptr<const tracer::proto::Trace>> ReferenceTrace(
      const std::string& reference, const tracer::TestCase& test);

  tracer::Executor* executor_;
  RouterOptions options_;
  std::shared_ptr<ReferenceCache> cache_;
};

// Deterministic one-record dump of a route (golden tests, bench logs).
std::string DumpRoute(const RouteResult& result);

}  // namespace egca::gates
