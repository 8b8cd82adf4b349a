// Failure-mode router m(y) (EGCA section 3.5, eq. 5, appendix D.2), in priority order:
//   SYNTAX      y does not compile, or raises at run time (span: the compiler's location,
//               or the statement the interpreter was executing when the exception escaped)
//   CONSTRAINT  I_C(y) = 0 (a constraint checker rejects it, or the tests' own code raised
//               NameError: the program lacks a name the tests use, kDefinesTestedNames) or
//               I_cmp(y) = 0 (its CFG is not comparable to the reference's,
//               egca::cfg::CompareStructure)
//   CORRECT     R_hat(y) = 1 and I_C(y) = 1
//   LOGIC       otherwise; the earliest divergence against the reference is localized on
//               the first failing test (egca::diff), plus the last divergence and a seeded
//               random executed boundary (the paper's ablation targets).
// R_hat = fraction of tests passed; R(y) = R_hat(y) * I_C(y).
//
// Cost: a LOGIC sample needs the trace of its first failing test. With grading_trace on
// (kAuto, the default) grading gets it: the child runs each test untraced and, only when
// it fails, once more traced (grading_retrace), bounded by an event cap and a time budget
// derived from the reference's trace; the child commits the untraced verdict first, so
// tracing never changes a verdict. Tests after the first failure run untraced, and so do
// all tests of a sample the static gates already route to CONSTRAINT. kNever: grade
// untraced and re-run the failing test traced. The reference's trace of a test is
// computed only when a LOGIC sample needs it, once per (reference, test, event cap), and
// kept in a ReferenceCache shared by every candidate of the problem; localization traces
// and aligns the reference only about as far as the candidate got (trim_reference_trace).
// docs/divergence.md has the details.
//
// A time limit is not an exception of the program: a timed-out candidate goes through the
// CONSTRAINT gate like any wrong answer and, if LOGIC, is localized from a bounded trace
// (the traced re-run, of any test kind, is stopped after `bounded_trace_seconds`).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
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

// The constraint the router adds when the tests' own code raises NameError: the program
// does not define a name the tests use (the entry point or a helper).
inline constexpr const char* kDefinesTestedNames = "defines_tested_names";

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

// When grading runs tests traced (see the file comment).
enum class GradingTrace {
  kNever,   // grade untraced; re-run a LOGIC sample's first failing test traced
  kAlways,  // trace every test up to the first failure during grading
  kAuto,    // kAlways except for tests known to be heavy (see the file comment)
};
// "never", "always", "auto".
const char* GradingTraceName(GradingTrace policy);
bool ParseGradingTrace(std::string_view name, GradingTrace* out);

struct RouterOptions {
  tracer::RunOptions run;           // grading: limits, comparison tolerances (trace_mode ignored)
  tracer::TraceOptions trace;       // localization runs (enabled forced on)
  cfg::StructureOptions structure;  // the I_cmp gate
  diff::DivergenceOptions divergence;
  // Eq. 5 (default) routes an exception raised at run time to SYNTAX; the paper's
  // appendix D.2 reads "LOGIC: executes but fails tests". On: run-time errors go to LOGIC.
  bool runtime_error_is_logic = false;
  bool check_comparability = true;
  // EGCA section 5's suggested bypass: a program that passes every test is CORRECT even
  // when a static gate (I_C, I_cmp) rejects it, with R = R_hat (the violations are still
  // reported). Off (default): eq. 5 as written, such a program is CONSTRAINT.
  bool passing_bypasses_gates = false;
  bool localize = true;  // off: route only
  // A timed-out candidate's traced re-run is stopped after this long (wall seconds).
  double bounded_trace_seconds = 0.25;
  uint64_t bounded_trace_events = 50000;  // event cap of that re-run

  GradingTrace grading_trace = GradingTrace::kAuto;
  // How a test is traced during grading: on (default), it runs untraced and only a failing
  // run is repeated traced (tracer::RunOptions::retrace_failures: in the same child, or in
  // a second one for a wrong answer), so a passing test costs nothing extra; off, the
  // graded run itself is traced.
  bool grading_retrace = true;
  // kAuto's threshold on the reference's trace of a test (events) when the graded run itself
  // is traced (grading_retrace off).
  uint64_t grading_trace_max_events = 20000;
  // CPU-time budget of a traced grading run (never above the test's limits; its wall
  // limit is 3 x budget + 0.1 s): grading_trace_slowdown x the reference's traced time on
  // the test when a complete reference trace is cached, at least grading_trace_min_seconds
  // (the budget when none is). Past it the test is re-run untraced with its full limits:
  // a looping candidate costs the budget on top of its timeout, not a second full timeout.
  double grading_trace_slowdown = 20;
  double grading_trace_min_seconds = 0.1;
  // Localization traces the reference with an event cap of about twice the candidate's
  // trace (cap levels reference_first_cap x 4^k; the reference's trace is a cached prefix
  // per level, its run stopped at the cap), aligns the candidate against a growing prefix
  // of it, and retries with the next level when the capped prefix shows no divergence.
  // Off: always the full reference trace (trace.max_events).
  bool trim_reference_trace = true;
  uint64_t reference_first_cap = 4096;
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
  // SYNTAX (issue 37): the exception's class ("SyntaxError" when it does not compile), the
  // name a name error is about (gates/cause.h), and the cause span credit::SyntaxCredit::
  // kCause uses (the raising statement unless it is a name error).
  std::string error_type;
  std::string error_name;
  std::optional<SourceSpan> cause_span;

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
  // Why the earliest span was chosen (LOGIC with an earliest divergence; else "" and 0):
  // the divergence kind ("value", "control", "return", "exception", "ended", "output"),
  // the confidence in [0, 1] that the span is the cause (diff::Divergence::confidence), and
  // the rule it rests on. credit::CreditOptions::min_confidence falls back to uniform credit
  // below a threshold.
  std::string divergence_kind;
  double localization_confidence = 0;
  std::string localization_evidence;

  // Which tests grading ran traced (their verdicts are still the untraced ones' by
  // construction), how many of those were re-run untraced, and whether the localized
  // candidate trace came from grading (true) or from a traced re-run (false).
  int32_t grading_traced_tests = 0;
  int32_t grading_retried_tests = 0;
  bool trace_from_grading = false;

  // Wall seconds. grade: the test runs (traced or not, with retries); localize: everything
  // after grading for a LOGIC sample, split into the candidate's traced re-run (0 when
  // grading traced it), the reference's traces (0 on cache hits) and the alignment;
  // prepare: parsing the candidate (CFG, boundaries; once per route).
  double grade_seconds = 0;
  double localize_seconds = 0;
  double candidate_trace_seconds = 0;
  double reference_trace_seconds = 0;
  double prepare_seconds = 0;
  double diff_seconds = 0;
};

// Reference traces and parsed references, keyed by a 64-bit hash of the reference source
// (and of the test and the trace's event cap for traces). Thread-safe; share one across
// routers of a problem set. trace_misses() counts the reference traces computed.
class ReferenceCache {
 public:
  // Counts a hit when found.
  std::shared_ptr<const tracer::proto::Trace> FindTrace(uint64_t key) const;
  // FindTrace without counting.
  std::shared_ptr<const tracer::proto::Trace> PeekTrace(uint64_t key) const;
  // FindTrace, or else claims `key` for the caller to compute (*claimed = true; it must
  // then PutTrace or ReleaseTrace it). While another thread holds the claim, waits for it:
  // two routers never trace the same reference and test at once.
  std::shared_ptr<const tracer::proto::Trace> FindOrClaimTrace(uint64_t key, bool* claimed);
  void ReleaseTrace(uint64_t key);
  // `computed`: the trace was just run (counted in trace_misses), not an alias of one.
  void PutTrace(uint64_t key, std::shared_ptr<const tracer::proto::Trace> trace,
                bool computed = true);
  std::shared_ptr<const diff::PreparedProgram> FindProgram(uint64_t key) const;
  void PutProgram(uint64_t key, std::shared_ptr<const diff::PreparedProgram> program);
  // GradingTrace::kAuto's knowledge per (reference, test) key: tracing that test in grading
  // costs too much (true), is cheap (false), or not known yet (nullopt).
  std::optional<bool> FindHeavy(uint64_t key) const;
  void PutHeavy(uint64_t key, bool heavy);
  size_t trace_hits() const;    // reference-trace requests served from the cache
  size_t trace_misses() const;  // reference traces computed

 private:
  mutable std::mutex mu_;
  std::condition_variable claim_released_;
  std::unordered_set<uint64_t> claimed_;
  std::unordered_map<uint64_t, std::shared_ptr<const tracer::proto::Trace>> traces_;
  std::unordered_map<uint64_t, std::shared_ptr<const diff::PreparedProgram>> programs_;
  std::unordered_map<uint64_t, bool> heavy_;
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

  // Traces the reference on every test of `problem` ahead of routing (e.g. while the
  // policy samples), at the first event cap: kAuto then knows which tests are heavy and
  // budgets traced grading runs from the start, and LOGIC samples find the reference's
  // traces cached. Optional: routing computes what it needs on demand.
  Status PrepareReference(const Problem& problem);

  // The localization step alone (egca-trace): traces `candidate` and the reference on
  // `test` and diffs them. Fills divergence / traces / spans / localization_note.
  Status Localize(std::string_view candidate, const Problem& problem, const tracer::TestCase& test,
                  bool candidate_timed_out, RouteResult* result);

  const RouterOptions& options() const { return options_; }
  ReferenceCache& cache() { return *cache_; }

 private:
  struct Graded;
  StatusOr<std::shared_ptr<const diff::PreparedProgram>> PreparedReference(
      const std::string& reference);
  // The reference's event cap for a need of `needed` events: the smallest level
  // reference_first_cap x 4^k >= needed, at most trace.max_events (always that one
  // when trim_reference_trace is off).
  uint64_t ReferenceCap(uint64_t needed) const;
  // The event cap of a candidate's trace when the reference's complete trace of the test
  // has `reference_events` events: 4x that + 1024, at least 4096, at most trace.max_events.
  uint64_t RetraceCap(uint64_t reference_events) const;
  // Runs the candidate traced on `test` (bounded by an alarm when it timed out) with an
  // event cap of `cap`, stopping it at the cap. Null with result->localization_note set
  // when no trace came back.
  StatusOr<std::shared_ptr<const tracer::proto::Trace>> TraceCandidate(
      std::string_view candidate, const tracer::TestCase& test, bool timed_out, uint64_t cap,
      RouteResult* result);
  // The reference's trace of `test` with an event cap of `cap` (a complete trace cached
  // at a lower cap serves too). Adds the time of a cache miss to *seconds.
  StatusOr<std::shared_ptr<const tracer::proto::Trace>> ReferenceTrace(
      const std::string& reference, const tracer::TestCase& test, uint64_t cap, double* seconds);
  // Grades every test, tracing the ones grading_trace selects up to the first failure.
  StatusOr<Graded> Grade(std::string_view candidate, const Problem& problem, bool want_trace,
                         RouteResult* result);
  // Localizes on `test` given the candidate's trace (null: re-run it traced).
  Status LocalizePrepared(std::string_view candidate, const diff::PreparedProgram& prepared,
                          const Problem& problem, const tracer::TestCase& test,
                          bool candidate_timed_out,
                          std::shared_ptr<const tracer::proto::Trace> candidate_trace,
                          RouteResult* result);

  tracer::Executor* executor_;
  RouterOptions options_;
  std::shared_ptr<ReferenceCache> cache_;
};

// Deterministic one-record dump of a route (golden tests, bench logs).
std::string DumpRoute(const RouteResult& result);

}  // namespace egca::gates
