#include "egca/gates/router.h"

#include "egca/gates/cause.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "egca/tracer/trace.pb.h"

namespace egca::gates {
namespace {

using sandbox::VerdictKind;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

uint64_t Fnv(uint64_t h, std::string_view s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  // Field separator, so ("ab", "c") and ("a", "bc") differ.
  h ^= 0xff;
  h *= 1099511628211ull;
  return h;
}

constexpr uint64_t kFnvBasis = 14695981039346656037ull;

// The statement of `program` containing `point` (the innermost one: smallest span), or the
// whole line when no statement does.
SourceSpan StatementAt(const cfg::ProgramCfg& program, const LineIndex& lines, SourcePoint point) {
  uint32_t byte = lines.Offset(point);
  std::optional<SourceSpan> best;
  for (const cfg::FunctionCfg& scope : program.scopes()) {
    for (cfg::BlockId b = 0; b < scope.block_count(); ++b) {
      for (const cfg::Statement& s : scope.block(b).statements) {
        if (!s.span.Contains(byte)) continue;
        if (!best || s.span.end_byte - s.span.begin_byte < best->end_byte - best->begin_byte) {
          best = s.span;
        }
      }
    }
  }
  return best ? *best : lines.LineSpan(point.line);
}

// A run-time error raised by the candidate's own code (the innermost user frame is known);
// a failing assertion of the test code has no candidate location and is a wrong answer.
bool IsProgramException(const sandbox::Verdict& v) {
  return v.kind == VerdictKind::kRuntimeError && v.line > 0;
}

// Verdicts a traced run may get only because it was traced (tracing costs time and
// memory): the test is then re-run untraced, whose verdict counts.
bool TracingMayChangeVerdict(const sandbox::Verdict& v) {
  switch (v.kind) {
    case VerdictKind::kTimeout:
    case VerdictKind::kMemoryLimit:
    case VerdictKind::kKilled:
      return true;
    case VerdictKind::kRuntimeError:
      return v.error_type == "RecursionError" || v.error_type == "MemoryError";
    default:
      return false;
  }
}

// Cache key of the reference's trace of a test at an event cap.
uint64_t CapKey(uint64_t reference_test_key, uint64_t cap) {
  return Fnv(reference_test_key, std::to_string(cap));
}

}  // namespace

std::string ConstraintViolation::ToString() const {
  std::string out = constraint + ": " + message;
  if (span) out += " [" + span->ToString() + "]";
  return out;
}

uint64_t ReferenceKey(std::string_view reference) { return Fnv(kFnvBasis, reference); }

uint64_t ReferenceTestKey(std::string_view reference, const tracer::TestCase& test) {
  uint64_t h = Fnv(kFnvBasis, reference);
  h = Fnv(h, tracer::TestKindName(test.kind));
  for (const std::string* f : {&test.function, &test.args_json, &test.stdin_data, &test.setup_code,
                               &test.test_code, &test.entry_point}) {
    h = Fnv(h, *f);
  }
  return h;
}

std::shared_ptr<const tracer::proto::Trace> ReferenceCache::FindTrace(uint64_t key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = traces_.find(key);
  if (it == traces_.end()) return nullptr;
  ++hits_;
  return it->second;
}

std::shared_ptr<const tracer::proto::Trace> ReferenceCache::PeekTrace(uint64_t key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = traces_.find(key);
  return it == traces_.end() ? nullptr : it->second;
}

std::shared_ptr<const tracer::proto::Trace> ReferenceCache::FindOrClaimTrace(uint64_t key,
                                                                            bool* claimed) {
  std::unique_lock<std::mutex> lock(mu_);
  *claimed = false;
  for (;;) {
    auto it = traces_.find(key);
    if (it != traces_.end()) {
      ++hits_;
      return it->second;
    }
    if (claimed_.insert(key).second) {
      *claimed = true;
      return nullptr;
    }
    claim_released_.wait(lock);
  }
}

void ReferenceCache::ReleaseTrace(uint64_t key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    claimed_.erase(key);
  }
  claim_released_.notify_all();
}

void ReferenceCache::PutTrace(uint64_t key, std::shared_ptr<const tracer::proto::Trace> trace,
                              bool computed) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    traces_[key] = std::move(trace);
    if (computed) ++misses_;
    claimed_.erase(key);
  }
  claim_released_.notify_all();
}

std::optional<bool> ReferenceCache::FindHeavy(uint64_t key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = heavy_.find(key);
  if (it == heavy_.end()) return std::nullopt;
  return it->second;
}

void ReferenceCache::PutHeavy(uint64_t key, bool heavy) {
  std::lock_guard<std::mutex> lock(mu_);
  heavy_[key] = heavy;
}

std::shared_ptr<const diff::PreparedProgram> ReferenceCache::FindProgram(uint64_t key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = programs_.find(key);
  return it == programs_.end() ? nullptr : it->second;
}

void ReferenceCache::PutProgram(uint64_t key, std::shared_ptr<const diff::PreparedProgram> p) {
  std::lock_guard<std::mutex> lock(mu_);
  programs_[key] = std::move(p);
}

size_t ReferenceCache::trace_hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

size_t ReferenceCache::trace_misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

const char* GradingTraceName(GradingTrace policy) {
  switch (policy) {
    case GradingTrace::kNever:
      return "never";
    case GradingTrace::kAlways:
      return "always";
    case GradingTrace::kAuto:
      return "auto";
  }
  return "auto";
}

bool ParseGradingTrace(std::string_view name, GradingTrace* out) {
  for (GradingTrace p : {GradingTrace::kNever, GradingTrace::kAlways, GradingTrace::kAuto}) {
    if (name == GradingTraceName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

// What grading hands to localization besides the verdicts.
struct Router::Graded {
  // The first failing test's trace, when grading ran it traced (null otherwise).
  std::shared_ptr<const tracer::proto::Trace> failing_trace;
};

Router::Router(tracer::Executor* executor, RouterOptions options,
               std::shared_ptr<ReferenceCache> cache)
    : executor_(executor),
      options_(std::move(options)),
      cache_(cache ? std::move(cache) : std::make_shared<ReferenceCache>()) {
  options_.run.trace_mode = tracer::TraceMode::kNone;
  options_.run.stop_on_first_failure = false;
  options_.run.trace_failures_only = false;
  options_.trace.enabled = true;
  options_.trace.max_events = std::max<uint64_t>(options_.trace.max_events, 1);
  options_.grading_trace_max_events = std::max<uint64_t>(options_.grading_trace_max_events, 1);
  options_.reference_first_cap = std::max<uint64_t>(options_.reference_first_cap, 1);
}

StatusOr<std::shared_ptr<const diff::PreparedProgram>> Router::PreparedReference(
    const std::string& reference) {
  uint64_t key = ReferenceKey(reference);
  if (auto p = cache_->FindProgram(key)) return p;
  auto built = diff::PreparedProgram::Build(reference);
  if (!built.ok()) return built.status().WithContext("reference");
  cache_->PutProgram(key, built.value());
  return built.value();
}

uint64_t Router::RetraceCap(uint64_t reference_events) const {
  const uint64_t full = options_.trace.max_events;
  return std::min(full, std::max<uint64_t>(4 * reference_events + 1024, 4096));
}

uint64_t Router::ReferenceCap(uint64_t needed) const {
  const uint64_t full = options_.trace.max_events;
  if (!options_.trim_reference_trace) return full;
  uint64_t cap = std::min(options_.reference_first_cap, full);
  while (cap < needed && cap < full) cap *= 4;
  return std::min(cap, full);
}

StatusOr<std::shared_ptr<const tracer::proto::Trace>> Router::ReferenceTrace(
    const std::string& reference, const tracer::TestCase& test, uint64_t cap, double* seconds) {
  const uint64_t base = ReferenceTestKey(reference, test);
  bool claimed = false;
  if (auto t = cache_->FindOrClaimTrace(CapKey(base, cap), &claimed)) return t;
  auto start = std::chrono::steady_clock::now();
  tracer::RunOptions run = options_.run;
  run.trace_mode = tracer::TraceMode::kNative;
  run.trace = options_.trace;
  run.trace.max_events = cap;
  run.trace.stop_at_limit = true;  // only the trace is used: no need to finish the run
  StatusOr<tracer::TestResult> r = executor_->Run(reference, test, run);
  if (!r.ok()) {
    cache_->ReleaseTrace(CapKey(base, cap));
    return r.status();
  }
  std::shared_ptr<const tracer::proto::Trace> trace = r->trace;
  if (!trace) trace = std::make_shared<tracer::proto::Trace>();
  cache_->PutTrace(CapKey(base, cap), trace);
  const uint64_t events = static_cast<uint64_t>(trace->events_size());
  if (!trace->truncated()) {
    // A complete trace of E events is the trace at every cap above E too (the reference
    // is deterministic: fixed hash seed, same input), so those lookups need no run.
    for (uint64_t c = ReferenceCap(0);; c = ReferenceCap(c + 1)) {
      if (c > events && c != cap) cache_->PutTrace(CapKey(base, c), trace, /*computed=*/false);
      if (c >= options_.trace.max_events) break;
    }
  }
  // kAuto's threshold: is the reference's trace of this test longer than it?
  const uint64_t threshold = options_.grading_trace_max_events;
  if (!trace->truncated()) {
    cache_->PutHeavy(base, events > threshold);
  } else if (cap >= threshold) {
    cache_->PutHeavy(base, true);
  }
  *seconds += Seconds(start);
  return trace;
}

Status Router::PrepareReference(const Problem& problem) {
  EGCA_RETURN_IF_ERROR(PreparedReference(problem.reference).status());
  double seconds = 0;
  for (const tracer::TestCase& test : problem.tests) {
    EGCA_RETURN_IF_ERROR(
        ReferenceTrace(problem.reference, test, ReferenceCap(0), &seconds).status());
  }
  return Status::Ok();
}

StatusOr<Router::Graded> Router::Grade(std::string_view candidate, const Problem& problem,
                                       bool want_trace, RouteResult* out) {
  Graded graded;
  tracer::ProgramResult& program = out->grading;
  program = tracer::ProgramResult();
  program.total = static_cast<int>(problem.tests.size());
  bool failed = false;
  // ---- One candidate process per program (issue 22) ----
  // Assert tests in two processes whose graded run is untraced (a failure is retraced in
  // a pair of its own) are graded as one batch: Executor::RunAll runs them in one
  // candidate process and one test-process session, each with its own verdict.
  std::vector<std::optional<tracer::TestResult>> batched(problem.tests.size());
  if (!want_trace || options_.grading_retrace || options_.grading_trace == GradingTrace::kNever) {
    std::vector<size_t> paired;
    std::vector<tracer::TestCase> paired_tests;
    for (size_t i = 0; i < problem.tests.size(); ++i) {
      if (problem.tests[i].kind == tracer::TestKind::kAssert &&
          !options_.run.assert_tests_in_one_process) {
        paired.push_back(i);
        paired_tests.push_back(problem.tests[i]);
      }
    }
    if (paired.size() >= 2) {
      StatusOr<tracer::ProgramResult> graded_batch =
          executor_->RunAll(candidate, paired_tests, options_.run);
      if (!graded_batch.ok()) return graded_batch.status().WithContext("assert tests");
      for (size_t m = 0; m < graded_batch->tests.size(); ++m) {
        batched[paired[m]] = std::move(graded_batch->tests[m]);
      }
    }
  }
  // ---- end of the batch ----
  for (size_t i = 0; i < problem.tests.size(); ++i) {
    const tracer::TestCase& test = problem.tests[i];
    if (!program.tests.empty() &&
        program.tests.back().verdict.kind == VerdictKind::kSyntaxError) {
      // Compilation does not depend on the test (as Executor::RunAll).
      tracer::TestResult copy = program.tests.back();
      copy.stdout_data.clear();
      copy.stderr_data.clear();
      copy.trace = nullptr;
      program.tests.push_back(std::move(copy));
      continue;
    }
    std::optional<tracer::TestResult> result;
    const uint64_t key = ReferenceTestKey(problem.reference, test);
    // Retracing in the child costs a passing test nothing, so kAuto retraces every test;
    // tracing the graded run itself skips tests known to be heavy.
    const bool traced_here =
        want_trace && !failed &&
        (options_.grading_trace == GradingTrace::kAlways ||
         (options_.grading_trace == GradingTrace::kAuto &&
          (options_.grading_retrace || cache_->FindHeavy(key) != std::optional<bool>(true))));
    // The traced grading run's options (traced_here), its time budget and whether its
    // limits were shortened.
    tracer::RunOptions run = options_.run;
    double budget = options_.grading_trace_min_seconds;
    bool shortened = false;
    if (traced_here) {
      run.trace_mode = tracer::TraceMode::kNative;
      run.trace = options_.trace;
      run.trace_failures_only = true;
      run.retrace_failures = options_.grading_retrace;
      // A run-time error is SYNTAX (eq. 5) unless runtime_error_is_logic: no trace needed.
      run.retrace_exceptions = options_.runtime_error_is_logic;
      // The traced run's time budget: a multiple of the reference's traced time when the
      // reference's trace is cached, at least grading_trace_min_seconds.
      // The reference's trace at the first cap: complete, or a prefix whose length and
      // time bound the whole's from below.
      auto reference = cache_->PeekTrace(CapKey(key, ReferenceCap(0)));
      const bool reference_known = reference && reference->events_size() > 0;
      if (reference_known) {
        budget = std::max(budget, options_.grading_trace_slowdown * reference->traced_seconds());
      }
      if (options_.grading_retrace) {
        // The graded run is untraced and keeps the test's limits; the retrace gets the
        // budget (wall time, at most half the limit) and an event cap, and stops the
        // program at either: only its trace is used. A candidate diverges from the
        // reference long before it has run 4x the reference's events; with no reference
        // trace yet, 4x the first cap of one. (No divergence in the capped trace:
        // localization traces the candidate again with the full cap.)
        run.trace_seconds = std::min(budget, run.limits.wall_seconds / 2);
        run.trace.stop_at_limit = true;
        run.trace.max_events =
            RetraceCap(reference_known ? static_cast<uint64_t>(reference->events_size())
                                       : options_.reference_first_cap);
      } else {
        // The graded run itself is traced: the budget is its CPU limit (load on the host
        // stretches wall time, not CPU time; wall time gets room for it). Past it the
        // untraced run below decides (a loop costs the budget, not a second full limit).
        run.limits.cpu_seconds = std::min(run.limits.cpu_seconds, budget);
        run.limits.wall_seconds = std::min(run.limits.wall_seconds, 3 * budget + 0.1);
        shortened = run.limits.wall_seconds < options_.run.limits.wall_seconds ||
                    run.limits.cpu_seconds < options_.run.limits.cpu_seconds;
      }
      ++out->grading_traced_tests;
    }
    if (traced_here && batched[i].has_value()) {
      // Graded in the batch; a failure is retraced in a pair of its own, as Executor::Run
      // does with retrace_failures (only the trace is taken).
      result = std::move(*batched[i]);
      const sandbox::Verdict& v = result->verdict;
      if (v.kind == VerdictKind::kKilled ||
          (v.kind == VerdictKind::kRuntimeError && (v.line <= 0 || run.retrace_exceptions))) {
        tracer::RunOptions retrace = run;
        retrace.retrace_failures = false;
        retrace.trace_failures_only = false;
        retrace.trace_budget_raises = false;
        StatusOr<tracer::TestResult> second = executor_->Run(candidate, test, retrace);
        if (second.ok()) graded.failing_trace = second->trace;
      }
    } else if (traced_here) {
      StatusOr<tracer::TestResult> traced = executor_->Run(candidate, test, run);
      if (!traced.ok()) return traced.status().WithContext(fmt::format("test {}", i + 1));
      // A retrace cannot change the verdict: the child commits the untraced run's record
      // before it starts (tracer::proto::ExecResult::retrace_follows).
      if (!options_.grading_retrace && TracingMayChangeVerdict(traced->verdict)) {
        ++out->grading_retried_tests;  // the untraced run below decides
        StatusOr<tracer::TestResult> plain = executor_->Run(candidate, test, options_.run);
        if (!plain.ok()) return plain.status().WithContext(fmt::format("test {}", i + 1));
        // Over budget traced but fast untraced: tracing this test is what costs; kAuto
        // grades it untraced for the next candidates.
        if (shortened && traced->verdict.kind == VerdictKind::kTimeout && plain->verdict.passed() &&
            plain->verdict.cpu_seconds * options_.grading_trace_slowdown < budget) {
          cache_->PutHeavy(key, true);
        }
        result = std::move(plain).value();
      } else {
        if (!traced->verdict.passed()) graded.failing_trace = traced->trace;
        traced->trace = nullptr;
        result = std::move(traced).value();
      }
    }
    if (!result && batched[i].has_value()) result = std::move(*batched[i]);
    if (!result) {
      StatusOr<tracer::TestResult> plain = executor_->Run(candidate, test, options_.run);
      if (!plain.ok()) return plain.status().WithContext(fmt::format("test {}", i + 1));
      result = std::move(plain).value();
    }
    if (result->verdict.passed()) {
      ++program.passed;
    } else {
      failed = true;
    }
    program.tests.push_back(std::move(*result));
  }
  return graded;
}

Status Router::Localize(std::string_view candidate, const Problem& problem,
                        const tracer::TestCase& test, bool candidate_timed_out,
                        RouteResult* result) {
  auto prepare_start = std::chrono::steady_clock::now();
  auto cand = diff::PreparedProgram::Build(std::string(candidate));
  result->prepare_seconds = Seconds(prepare_start);
  if (!cand.ok()) {
    result->localization_note = "candidate not analyzable: " + cand.status().message();
    return Status::Ok();
  }
  return LocalizePrepared(candidate, *cand.value(), problem, test, candidate_timed_out, nullptr,
                          result);
}

StatusOr<std::shared_ptr<const tracer::proto::Trace>> Router::TraceCandidate(
    std::string_view candidate, const tracer::TestCase& test, bool timed_out, uint64_t cap,
    RouteResult* result) {
  tracer::RunOptions run = options_.run;
  run.trace_mode = tracer::TraceMode::kNative;
  run.trace = options_.trace;
  run.trace.max_events = cap;
  // Only the trace is used (the verdict is grading's): stop the program at the cap.
  run.trace.stop_at_limit = true;
  if (timed_out) {
    // The bounded trace of a test that timed out: the harness stops the program (any test
    // kind, stdin included) after bounded_trace_seconds; room for that and the trace to
    // come back.
    run.trace_seconds = options_.bounded_trace_seconds;
    run.trace_budget_raises = true;  // the trace shows where the program was looping
    run.limits.wall_seconds = std::max(run.limits.wall_seconds, options_.bounded_trace_seconds + 2);
    run.limits.cpu_seconds = std::max(run.limits.cpu_seconds, options_.bounded_trace_seconds + 2);
  }
  auto trace_start = std::chrono::steady_clock::now();
  EGCA_ASSIGN_OR_RETURN(tracer::TestResult cr, executor_->Run(candidate, test, run));
  result->candidate_trace_seconds += Seconds(trace_start);
  if (!cr.trace) {
    result->localization_note = fmt::format("the candidate's traced run returned no trace ({})",
                                            sandbox::VerdictName(cr.verdict.kind));
  }
  return std::shared_ptr<const tracer::proto::Trace>(cr.trace);
}

Status Router::LocalizePrepared(std::string_view candidate, const diff::PreparedProgram& prepared,
                                const Problem& problem, const tracer::TestCase& test,
                                bool candidate_timed_out,
                                std::shared_ptr<const tracer::proto::Trace> candidate_trace,
                                RouteResult* result) {
  auto start = std::chrono::steady_clock::now();
  EGCA_ASSIGN_OR_RETURN(auto ref, PreparedReference(problem.reference));
  result->trace_from_grading = candidate_trace != nullptr;
  const uint64_t full = options_.trace.max_events;
  // The most of the candidate's trace localization will ask for.
  const uint64_t candidate_full =
      candidate_timed_out ? std::min(full, options_.bounded_trace_events) : full;
  if (!candidate_trace) {
    // A candidate diverges within a few times the reference's events (RetraceCap): with
    // the reference's complete trace at hand, trace no more of the candidate than that.
    uint64_t cap = candidate_full;
    EGCA_ASSIGN_OR_RETURN(auto known,
                          ReferenceTrace(problem.reference, test, ReferenceCap(0),
                                         &result->reference_trace_seconds));
    if (known->events_size() > 0) {
      cap = std::min(cap, RetraceCap(static_cast<uint64_t>(known->events_size())));
    }
    EGCA_ASSIGN_OR_RETURN(candidate_trace,
                          TraceCandidate(candidate, test, candidate_timed_out, cap, result));
    if (!candidate_trace) {
      result->localize_seconds = Seconds(start);
      return Status::Ok();
    }
  }

  // The reference only as far as the candidate got (about twice its events), then more of
  // it while the prefix shows no divergence: the candidate may do in one step what the
  // reference does in many. The reference's trace is cached per cap level; the aligned
  // prefix of it grows 4x at a time within a level before the next level is traced.
  diff::DivergenceReport report;
  bool candidate_widened = false;
  for (;;) {
    result->candidate_trace = candidate_trace;
    uint64_t prefix = 2 * static_cast<uint64_t>(candidate_trace->events_size()) + 1024;
    uint64_t cap = ReferenceCap(prefix);
    for (;;) {
      EGCA_ASSIGN_OR_RETURN(result->reference_trace,
                            ReferenceTrace(problem.reference, test, cap,
                                           &result->reference_trace_seconds));
      const uint64_t ref_events = static_cast<uint64_t>(result->reference_trace->events_size());
      diff::DivergenceOptions divergence = options_.divergence;
      // Output is compared where it is what the test judges.
      divergence.compare_output = test.kind == tracer::TestKind::kStdio;
      if (options_.trim_reference_trace && prefix < ref_events) {
        divergence.max_reference_events = prefix;
      }
      auto diff_start = std::chrono::steady_clock::now();
      report = diff::FindDivergence(prepared, *candidate_trace, *ref, *result->reference_trace,
                                    divergence);
      result->diff_seconds += Seconds(diff_start);
      if (report.earliest) break;
      if (divergence.max_reference_events > 0) {
        prefix *= 4;  // more of the trace at hand
        continue;
      }
      const bool capped_here = cap < full && result->reference_trace->truncated();
      if (!capped_here) break;
      cap = ReferenceCap(cap + 1);
    }
    // No divergence within a capped candidate trace (the retrace's cap or time budget):
    // trace the candidate once more, as far as localization allows.
    const tracer::proto::Trace& ct = *candidate_trace;
    const bool candidate_capped =
        ct.truncated() && (ct.truncation() == tracer::proto::TIME_BUDGET ||
                           (ct.truncation() == tracer::proto::MAX_EVENTS &&
                            ct.options().max_events() < candidate_full));
    if (report.earliest || !candidate_capped || candidate_widened) break;
    candidate_widened = true;
    EGCA_ASSIGN_OR_RETURN(auto wider, TraceCandidate(candidate, test, candidate_timed_out,
                                                     candidate_full, result));
    if (!wider) break;
    candidate_trace = std::move(wider);
    result->trace_from_grading = false;
  }
  if (report.earliest) {
    result->earliest_divergence = report.earliest->span;
    result->last_divergence = report.last->span;
    result->divergence_kind = diff::DivergenceKindName(report.earliest->kind);
    result->localization_confidence = report.earliest->confidence;
    result->localization_evidence = report.earliest->evidence;
  } else if (result->localization_note.empty()) {
    result->localization_note = report.note;
  }
  result->random_boundary = report.random_boundary;
  result->divergence = std::move(report);
  result->localize_seconds = Seconds(start);
  return Status::Ok();
}

StatusOr<RouteResult> Router::Route(std::string_view candidate, const Problem& problem) {
  RouteResult out;
  out.grading.total = static_cast<int>(problem.tests.size());

  // SYNTAX (compile): tree-sitter plus CPython's compile-time checks egca::cfg models. The
  // prepared candidate (CFG, boundaries, lines) also serves the gates and localization.
  auto prepare_start = std::chrono::steady_clock::now();
  auto prepared = diff::PreparedProgram::Build(std::string(candidate));
  out.prepare_seconds = Seconds(prepare_start);
  if (!prepared.ok()) {
    // Only programs that do not parse get here: parse again for the error's location.
    StatusOr<cfg::ProgramCfg> built = cfg::ProgramCfg::Build(candidate);
    out.mode = FailureMode::kSyntax;
    if (built.ok() && built.value().syntax_error()) {
      out.error_span = built.value().syntax_error()->span;
      out.error_message = "SyntaxError: " + built.value().syntax_error()->message;
    } else {
      out.error_message = (built.ok() ? prepared.status() : built.status()).message();
    }
    out.error_type = "SyntaxError";
    out.cause_span = out.error_span;
    out.reason = "does not compile";
    return out;
  }
  const diff::PreparedProgram& cand = *prepared.value();
  const cfg::ProgramCfg& program = cand.cfg();

  // The static gates first (reported after SYNTAX, in eq. 5's order): they decide whether
  // this sample can be LOGIC, i.e. whether grading should keep a failing test's trace.
  std::vector<ConstraintViolation> violations;
  for (const auto& c : problem.constraints) {
    if (auto violation = c->Violation(candidate, program)) {
      if (violation->constraint.empty()) violation->constraint = c->name();
      violations.push_back(std::move(*violation));
    }
  }
  EGCA_ASSIGN_OR_RETURN(auto ref, PreparedReference(problem.reference));
  cfg::Comparability comparability =
      cfg::CompareStructure(program, ref->cfg(), options_.structure);
  const bool may_be_logic =
      violations.empty() && (!options_.check_comparability || comparability.comparable);

  auto grade_start = std::chrono::steady_clock::now();
  EGCA_ASSIGN_OR_RETURN(Graded graded,
                        Grade(candidate, problem, options_.localize && may_be_logic, &out));
  out.grade_seconds = Seconds(grade_start);
  out.pass_fraction = out.grading.pass_fraction();
  for (size_t i = 0; i < out.grading.tests.size(); ++i) {
    if (!out.grading.tests[i].verdict.passed()) {
      out.first_failing_test = static_cast<int32_t>(i);
      break;
    }
  }

  // SYNTAX (CPython rejected it, or it raised at run time: eq. 5's first case).
  for (const tracer::TestResult& t : out.grading.tests) {
    const sandbox::Verdict& v = t.verdict;
    bool compile_error = v.kind == VerdictKind::kSyntaxError;
    bool raised = IsProgramException(v) && !options_.runtime_error_is_logic;
    if (!compile_error && !raised) continue;
    out.mode = FailureMode::kSyntax;
    out.error_message = v.error_type + (v.message.empty() ? "" : ": " + v.message);
    if (v.line > 0) out.error_span = StatementAt(program, cand.lines(), {v.line, v.column});
    out.error_type = compile_error ? "SyntaxError" : v.error_type;
    if (out.error_span) {
      const ErrorCause cause =
          CauseOfError(program, candidate, out.error_type, v.message, *out.error_span);
      out.error_name = cause.name;
      out.cause_span = cause.span;
    }
    out.reason = compile_error ? "does not compile" : "raises " + v.error_type + " at run time";
    return out;
  }

  // A NameError the test code raised itself (line 0: not in the program) means the program
  // lacks a name the tests use, the entry point or a helper: an interface the program does
  // not meet, not a wrong value to localize.
  for (size_t i = 0; i < out.grading.tests.size(); ++i) {
    const sandbox::Verdict& v = out.grading.tests[i].verdict;
    if (v.kind != VerdictKind::kRuntimeError || v.line > 0 || v.error_type != "NameError") {
      continue;
    }
    violations.push_back({std::string(kDefinesTestedNames),
                          fmt::format("the tests use a name the program does not define "
                                      "(test {}: NameError: {})",
                                      i + 1, v.message),
                          std::nullopt});
    break;
  }

  // CONSTRAINT: I_C and I_cmp.
  out.constraint_violations = std::move(violations);
  out.constraints_satisfied = out.constraint_violations.empty();
  out.reward = out.pass_fraction * (out.constraints_satisfied ? 1.0 : 0.0);
  out.comparability = comparability;
  if (options_.passing_bypasses_gates && out.grading.all_passed()) {
    // EGCA section 5: a program that passes every test is not held back by the gates.
    out.mode = FailureMode::kCorrect;
    out.reward = out.pass_fraction;
    const bool gated = !out.constraints_satisfied ||
                       (options_.check_comparability && !out.comparability->comparable);
    out.reason = gated ? "passes every test (the static gates are bypassed)" : "passes every test";
    return out;
  }
  if (!out.constraints_satisfied) {
    out.mode = FailureMode::kConstraint;
    out.reason = "violates " + out.constraint_violations.front().ToString();
    return out;
  }
  if (options_.check_comparability && !out.comparability->comparable) {
    out.mode = FailureMode::kConstraint;
    out.reason = fmt::format("not comparable to the reference (similarity {:.3f} < {:.2f})",
                             out.comparability->score, out.comparability->threshold);
    return out;
  }
  if (out.grading.all_passed()) {
    out.mode = FailureMode::kCorrect;
    out.reason = "passes every test";
    return out;
  }
  out.mode = FailureMode::kLogic;
  if (out.first_failing_test < 0) {
    out.reason = "no tests";
    return out;
  }
  const tracer::TestResult& failing = out.grading.tests[out.first_failing_test];
  out.reason = fmt::format("fails test {} ({})", out.first_failing_test + 1,
                           sandbox::VerdictName(failing.verdict.kind));
  if (!options_.localize) return out;
  bool timed_out = failing.verdict.kind == VerdictKind::kTimeout;
  EGCA_RETURN_IF_ERROR(LocalizePrepared(candidate, cand, problem,
                                        problem.tests[out.first_failing_test], timed_out,
                                        std::move(graded.failing_trace), &out));
  return out;
}

std::string DumpRoute(const RouteResult& r) {
  std::string out =
      fmt::format("mode={} reason=\"{}\" passed={}/{} R_hat={:.4f} I_C={} R={:.4f}",
                  FailureModeName(r.mode), r.reason, r.grading.passed, r.grading.total,
                  r.pass_fraction, r.constraints_satisfied ? 1 : 0, r.reward);
  if (r.comparability) {
    out += fmt::format(" I_cmp={} sim={:.3f}", r.comparability->comparable ? 1 : 0,
                       r.comparability->score);
  }
  out += "\n";
  if (r.error_span) out += "error [" + r.error_span->ToString() + "] " + r.error_message + "\n";
  if (r.divergence) out += diff::DumpReport(*r.divergence);
  if (!r.localization_note.empty()) out += "note: " + r.localization_note + "\n";
  return out;
}

}  // namespace egca::gates
