#include "egca/gates/router.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

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

// The bounded re-run of a timed-out test: stop the program with an exception after
// `seconds` so the child returns the trace it has. Only tests that run code after the
// program's module level can arm the alarm (call and assertion tests).
std::optional<tracer::TestCase> WithAlarm(const tracer::TestCase& test, double seconds) {
  std::string alarm = fmt::format(
      "import signal as _egca_signal\n"
      "def _egca_stop(*_):\n"
      "    raise TimeoutError('egca: bounded trace of a timed-out test')\n"
      "_egca_signal.signal(_egca_signal.SIGALRM, _egca_stop)\n"
      "_egca_signal.setitimer(_egca_signal.ITIMER_REAL, {:.3f})\n",
      seconds);
  switch (test.kind) {
    case tracer::TestKind::kAssert: {
      tracer::TestCase t = test;
      t.setup_code = alarm + t.setup_code;
      return t;
    }
    case tracer::TestKind::kCall: {
      tracer::TestCase t =
          tracer::TestCase::Asserts(fmt::format("{}(*__import__('json').loads({}))", test.function,
                                                nlohmann::json(test.args_json).dump()),
                                    alarm);
      t.name = test.name;
      return t;
    }
    case tracer::TestKind::kStdio:
      return std::nullopt;
  }
  return std::nullopt;
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
  if (it == traces_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return it->second;
}

void ReferenceCache::PutTrace(uint64_t key, std::shared_ptr<const tracer::proto::Trace> trace) {
  std::lock_guard<std::mutex> lock(mu_);
  traces_[key] = std::move(trace);
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

Router::Router(tracer::Executor* executor, RouterOptions options,
               std::shared_ptr<ReferenceCache> cache)
    : executor_(executor),
      options_(std::move(options)),
      cache_(cache ? std::move(cache) : std::make_shared<ReferenceCache>()) {
  options_.run.trace_mode = tracer::TraceMode::kNone;
  options_.run.stop_on_first_failure = false;
  options_.trace.enabled = true;
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

StatusOr<std::shared_ptr<const tracer::proto::Trace>> Router::ReferenceTrace(
    const std::string& reference, const tracer::TestCase& test) {
  uint64_t key = ReferenceTestKey(reference, test);
  if (auto t = cache_->FindTrace(key)) return t;
  tracer::RunOptions run = options_.run;
  run.trace_mode = tracer::TraceMode::kNative;
  run.trace = options_.trace;
  EGCA_ASSIGN_OR_RETURN(tracer::TestResult r, executor_->Run(reference, test, run));
  std::shared_ptr<const tracer::proto::Trace> trace = r.trace;
  if (!trace) trace = std::make_shared<tracer::proto::Trace>();
  cache_->PutTrace(key, trace);
  return trace;
}

Status Router::Localize(std::string_view candidate, const Problem& problem,
                        const tracer::TestCase& test, bool candidate_timed_out,
                        RouteResult* result) {
  auto start = std::chrono::steady_clock::now();
  EGCA_ASSIGN_OR_RETURN(auto ref, PreparedReference(problem.reference));
  auto cand = diff::PreparedProgram::Build(std::string(candidate));
  if (!cand.ok()) {
    result->localization_note = "candidate not analyzable: " + cand.status().message();
    return Status::Ok();
  }
  tracer::RunOptions run = options_.run;
  run.trace_mode = tracer::TraceMode::kNative;
  run.trace = options_.trace;
  tracer::TestCase traced = test;
  if (candidate_timed_out) {
    auto bounded = WithAlarm(test, options_.bounded_trace_seconds);
    if (!bounded) {
      result->localization_note = "timed out on a stdin test: no bounded trace";
      return Status::Ok();
    }
    traced = *bounded;
    // Room for the alarm to fire and the trace to come back; fewer events (the bounded
    // prefix is what gets aligned).
    run.limits.wall_seconds = std::max(run.limits.wall_seconds, options_.bounded_trace_seconds + 2);
    run.limits.cpu_seconds = std::max(run.limits.cpu_seconds, options_.bounded_trace_seconds + 2);
    run.trace.max_events = std::min<uint64_t>(run.trace.max_events, options_.bounded_trace_events);
  }
  EGCA_ASSIGN_OR_RETURN(tracer::TestResult cr, executor_->Run(candidate, traced, run));
  EGCA_ASSIGN_OR_RETURN(result->reference_trace, ReferenceTrace(problem.reference, test));
  result->candidate_trace = cr.trace;
  if (!cr.trace) {
    result->localization_note = fmt::format("the candidate's traced run returned no trace ({})",
                                            sandbox::VerdictName(cr.verdict.kind));
    result->localize_seconds = Seconds(start);
    return Status::Ok();
  }
  diff::DivergenceReport report = diff::FindDivergence(
      *cand.value(), *cr.trace, *ref, *result->reference_trace, options_.divergence);
  if (report.earliest) {
    result->earliest_divergence = report.earliest->span;
    result->last_divergence = report.last->span;
  } else {
    result->localization_note = report.note;
  }
  result->random_boundary = report.random_boundary;
  result->divergence = std::move(report);
  result->localize_seconds = Seconds(start);
  return Status::Ok();
}

StatusOr<RouteResult> Router::Route(std::string_view candidate, const Problem& problem) {
  RouteResult out;
  const int total = static_cast<int>(problem.tests.size());
  out.grading.total = total;

  // SYNTAX (compile): tree-sitter plus CPython's compile-time checks egca::cfg models.
  StatusOr<cfg::ProgramCfg> built = cfg::ProgramCfg::Build(candidate);
  LineIndex lines(candidate);
  if (!built.ok() || !built.value().parsed()) {
    out.mode = FailureMode::kSyntax;
    if (built.ok()) {
      out.error_span = built.value().syntax_error()->span;
      out.error_message = "SyntaxError: " + built.value().syntax_error()->message;
    } else {
      out.error_message = built.status().message();
    }
    out.reason = "does not compile";
    return out;
  }
  const cfg::ProgramCfg& program = built.value();

  auto grade_start = std::chrono::steady_clock::now();
  EGCA_ASSIGN_OR_RETURN(out.grading, executor_->RunAll(candidate, problem.tests, options_.run));
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
    if (v.line > 0) out.error_span = StatementAt(program, lines, {v.line, v.column});
    out.reason = compile_error ? "does not compile" : "raises " + v.error_type + " at run time";
    return out;
  }

  // CONSTRAINT: I_C and I_cmp.
  for (const auto& c : problem.constraints) {
    if (auto violation = c->Violation(candidate, program)) {
      if (violation->constraint.empty()) violation->constraint = c->name();
      out.constraint_violations.push_back(std::move(*violation));
    }
  }
  out.constraints_satisfied = out.constraint_violations.empty();
  out.reward = out.pass_fraction * (out.constraints_satisfied ? 1.0 : 0.0);
  EGCA_ASSIGN_OR_RETURN(auto ref, PreparedReference(problem.reference));
  out.comparability = cfg::CompareStructure(program, ref->cfg(), options_.structure);
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
  EGCA_RETURN_IF_ERROR(
      Localize(candidate, problem, problem.tests[out.first_failing_test], timed_out, &out));
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
