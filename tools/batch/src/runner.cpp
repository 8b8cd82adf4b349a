#include "egca/batch/runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "egca/cfg/boundaries.h"
#include "egca/cfg/cfg.h"
#include "egca/core/files.h"
#include "egca/core/sha256.h"
#include "egca/cpp/router.h"
#include "egca/diff/divergence.h"

namespace egca::batch {

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// One sample of the run, matched to its problem.
struct Item {
  size_t sample = 0;  // index into the samples
  std::string key;
  int32_t dup = 0;
  bool done = false;  // already in the store
};

// One distinct program of one problem: routed once, recorded for every copy.
struct Task {
  size_t problem = 0;  // index into Work::problems
  SampleProgram program;
  std::string key;
  std::vector<Item> items;  // copies, dup order
  bool pending() const {
    return std::any_of(items.begin(), items.end(), [](const Item& i) { return !i.done; });
  }
};

// One problem of the run, with what routing needs.
struct WorkProblem {
  const ProblemRecord* record = nullptr;
  bool cpp = false;           // record->language == "cpp": egca::cpp grades and routes it
  std::vector<size_t> tasks;  // indices into Work::tasks, in key order
  bool resolved = false;
  ProblemResolution resolution;
  gates::Problem routing;  // reference, tests, constraints
};

struct Work {
  std::vector<WorkProblem> problems;
  std::vector<Task> tasks;
};

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

double LoadAverage() {
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : 0;
}

std::string FirstFailure(const tracer::ProgramResult& r) {
  for (size_t i = 0; i < r.tests.size(); ++i) {
    const auto& v = r.tests[i].verdict;
    if (v.passed()) continue;
    std::string what = sandbox::VerdictName(v.kind);
    if (!v.error_type.empty()) what += " " + v.error_type;
    if (!v.message.empty()) what += ": " + v.message.substr(0, 200);
    return fmt::format("test {}: {}", i + 1, what);
  }
  return fmt::format("{} of {} tests run", r.tests.size(), r.total);
}

LocatedSpan Locate(const SourceSpan& span, const SampleProgram& program,
                   const std::string& completion, const LineIndex& completion_lines) {
  LocatedSpan out;
  out.program = span;
  int64_t b = program.ToCompletionByte(span.begin_byte);
  int64_t e = program.ToCompletionByte(span.end_byte);
  if (b >= 0 && e >= b && static_cast<size_t>(e) <= completion.size()) {
    out.in_completion = true;
    out.completion =
        completion_lines.SpanFromBytes(static_cast<uint32_t>(b), static_cast<uint32_t>(e));
  }
  return out;
}

// A cause span (gates/cause.h) may start in the prompt (a HumanEval body's def line): its
// part in the completion, from the first program byte the completion holds.
LocatedSpan LocateClipped(SourceSpan span, const SampleProgram& program,
                          const std::string& completion, const LineIndex& completion_lines,
                          const LineIndex& program_lines) {
  uint32_t b = span.begin_byte;
  while (b < span.end_byte && program.ToCompletionByte(b) < 0) ++b;
  if (b > span.begin_byte && b < span.end_byte) span = program_lines.SpanFromBytes(b, span.end_byte);
  return Locate(span, program, completion, completion_lines);
}

// A bad record at "<file>:<line>" (the origin of a JSONL record) or at a non-line origin.
BadRecord BadAt(const std::string& origin, std::string message) {
  BadRecord b;
  b.file = origin;
  b.message = std::move(message);
  size_t colon = origin.rfind(':');
  if (colon != std::string::npos && colon + 1 < origin.size() &&
      origin.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
    b.file = origin.substr(0, colon);
    b.line = std::stoll(origin.substr(colon + 1));
  }
  return b;
}

// Last line of `text` holding a non-blank character (1-based); 1 for an empty text.
int32_t LastNonBlankLine(const LineIndex& lines) {
  for (int32_t l = lines.line_count(); l >= 1; --l) {
    if (lines.LineText(l).find_first_not_of(" \t\r\f\v") != std::string_view::npos) return l;
  }
  return 1;
}

}  // namespace

std::string ProblemKind(const ProblemRecord& problem) {
  std::set<tracer::TestKind> kinds;
  for (const auto& t : problem.tests) kinds.insert(t.kind);
  if (kinds.size() != 1) return "mixed";
  switch (*kinds.begin()) {
    case tracer::TestKind::kAssert:
      return "assert";
    case tracer::TestKind::kCall:
      return "call";
    case tracer::TestKind::kStdio:
      return problem.starter_code.empty() ? "stdin" : "stdin (call-based)";
  }
  return "mixed";
}

std::string SampleKey(const Sample& sample) {
  // Length-prefixed fields: no two different samples encode to the same text.
  const char* read = sample.detect_body          ? "detect"
                     : sample.completion_is_body ? "body"
                                                 : "program";
  std::string text = fmt::format("egca-sample/2\nmodel {}:", sample.model.size());
  text += sample.model;
  text += fmt::format("\nread {}\ncompletion {}:", read, sample.completion.size());
  text += sample.completion;
  return Sha256Hex(text);
}

std::optional<double> RelativePosition(int32_t line, int32_t first, int32_t last) {
  if (line < first) return std::nullopt;
  if (last < first) last = first;
  double pos = static_cast<double>(line - first) / static_cast<double>(last - first + 1);
  return std::min(pos, std::nextafter(1.0, 0.0));
}

std::optional<int32_t> CountBoundaries(std::string_view source) {
  auto built = cfg::ProgramCfg::Build(source);
  if (!built.ok() || !built.value().parsed()) return std::nullopt;
  cfg::ProgramBoundaries b = cfg::ProgramBoundaries::Compute(built.value());
  int32_t k = 0;
  for (size_t s = 0; s < b.scope_count(); ++s)
    k += static_cast<int32_t>(b.scope(static_cast<int32_t>(s)).size());
  return k;
}

SampleRecord MakeRecord(const Sample& sample, const ProblemRecord& problem,
                        const SampleProgram& program, const gates::RouteResult& r,
                        ReferenceKind reference) {
  SampleRecord out;
  out.problem = problem.id;
  out.key = SampleKey(sample);
  out.model = sample.model;
  out.difficulty = problem.difficulty;
  out.origin = sample.origin;
  out.sample_id = sample.sample_id;
  out.program = program.code;
  out.empty = program.empty;
  out.mode = r.mode;
  out.reason = r.reason;
  if (r.first_failing_test >= 0 &&
      static_cast<size_t>(r.first_failing_test) < r.grading.tests.size()) {
    // "RUNTIME_ERROR (AssertionError)": a failing assert of the test code is a wrong answer
    // the executor reports as an exception of the test; the type tells the two apart.
    const sandbox::Verdict& v = r.grading.tests[r.first_failing_test].verdict;
    out.verdict = sandbox::VerdictName(v.kind);
    if (!v.error_type.empty()) out.verdict += " (" + v.error_type + ")";
  }
  out.passed = r.grading.passed;
  out.tests = r.grading.total;
  out.r_hat = r.pass_fraction;
  out.i_c = r.constraints_satisfied;
  for (const auto& v : r.constraint_violations)
    out.violations.push_back({v.constraint, v.message, v.span});
  if (r.comparability && reference != ReferenceKind::kNone) {
    out.i_cmp = r.comparability->comparable;
    out.similarity = r.comparability->score;
  }
  out.reference = reference;
  out.program_bytes = static_cast<uint32_t>(program.code.size());
  LineIndex lines(program.code);
  out.program_lines = lines.line_count();
  LineIndex completion_lines(sample.completion);
  // K counts Python CFG boundaries; a C++ program has none of those (its steps are lines).
  if (r.mode != FailureMode::kSyntax && problem.language != "cpp") {
    out.k = CountBoundaries(program.code);
  }
  if (r.error_span) out.error = Locate(*r.error_span, program, sample.completion, completion_lines);
  out.error_message = r.error_message;
  out.error_type = r.error_type;
  out.error_name = r.error_name;
  if (r.cause_span) {
    out.cause = LocateClipped(*r.cause_span, program, sample.completion, completion_lines, lines);
  }
  out.localization_note = r.localization_note;
  if (r.mode == FailureMode::kLogic && r.divergence && r.divergence->earliest) {
    const diff::DivergenceReport& d = *r.divergence;
    out.localized = true;
    out.divergence_kind = diff::DivergenceKindName(d.earliest->kind);
    out.localization_confidence = d.earliest->confidence;
    out.localization_evidence = d.earliest->evidence;
    out.k_executed = static_cast<int32_t>(d.executed_boundaries.size());
    for (size_t i = 0; i < d.executed_boundaries.size(); ++i) {
      if (d.executed_boundaries[i] == d.earliest->block_span) {
        out.k_star = static_cast<int32_t>(i + 1);
        break;
      }
    }
  }
  if (r.earliest_divergence) {
    out.earliest = Locate(*r.earliest_divergence, program, sample.completion, completion_lines);
  }
  if (r.last_divergence)
    out.last = Locate(*r.last_divergence, program, sample.completion, completion_lines);
  if (r.random_boundary)
    out.random = Locate(*r.random_boundary, program, sample.completion, completion_lines);
  if (out.localized && out.earliest) {
    int64_t first_byte = program.from_body ? -program.offset : 0;
    first_byte = std::clamp<int64_t>(first_byte, 0, static_cast<int64_t>(program.code.size()));
    int32_t first_line = lines.Point(static_cast<uint32_t>(first_byte)).line;
    if (out.earliest->program.begin_byte >= first_byte) {
      out.relative_position =
          RelativePosition(out.earliest->program.begin.line, first_line, LastNonBlankLine(lines));
    }
  }
  out.grade_seconds = r.grade_seconds;
  out.localize_seconds = r.localize_seconds;
  return out;
}

namespace {

class Runner {
 public:
  Runner(const std::vector<ProblemRecord>& problems, const std::vector<Sample>& samples,
         ResultStore* store, const RunnerOptions& options)
      : problems_(problems), samples_(samples), store_(store), options_(options) {}

  StatusOr<RunStats> Run(const std::vector<BadRecord>& load_bad);

 private:
  void Plan(std::vector<BadRecord>* bad);
  Status StoreBad(const std::vector<BadRecord>& bad);
  Status Resolve(WorkProblem& p, int worker);
  // Grades `program` on the problem's tests (untraced, stopping at the first failure).
  StatusOr<tracer::ProgramResult> Grade(const WorkProblem& p, const std::string& program,
                                        int worker);
  Status SetUpRouting(WorkProblem& p);
  // routers[w][apps conventions][no reference]
  Status RouteTask(Task& t, int worker);
  // Runs `fn(worker, index)` for indices [0, n) on every worker; first error wins.
  Status Parallel(size_t n, const std::function<Status(int, size_t)>& fn);
  bool Stopped() const { return options_.stop != nullptr && options_.stop->load(); }
  void Error(const std::string& line);

  const std::vector<ProblemRecord>& problems_;
  const std::vector<Sample>& samples_;
  ResultStore* store_;
  const RunnerOptions& options_;
  Work work_;
  int workers_ = 0;
  // Per worker, each only when the run has problems of that language.
  std::vector<std::unique_ptr<tracer::Executor>> owned_executors_;
  std::vector<tracer::Executor*> executors_;  // owned_executors_ or the borrowed ones
  std::vector<std::unique_ptr<cpp::CppExecutor>> cpp_executors_;
  // Per worker: [no reference].
  std::vector<std::array<std::unique_ptr<cpp::CppRouter>, 2>> cpp_routers_;
  // Per worker: [APPS conventions][no reference] (grading options and gates differ).
  std::vector<std::array<std::array<std::unique_ptr<gates::Router>, 2>, 2>> routers_;
  std::shared_ptr<gates::ReferenceCache> cache_ = std::make_shared<gates::ReferenceCache>();
  std::unique_ptr<Progress> progress_;
  RunStats stats_;
  std::mutex stats_mu_;
};

void Runner::Error(const std::string& line) {
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.errors;
  }
  if (progress_) {
    progress_->Note("egca-batch: " + line);
  } else {
    fmt::print(stderr, "egca-batch: {}\n", line);
  }
}

void Runner::Plan(std::vector<BadRecord>* bad) {
  // Problems by id (first wins: the loaders already report duplicates).
  std::unordered_map<std::string, size_t> by_id;
  std::vector<int64_t> work_index(problems_.size(), -1);
  std::vector<std::string> ids;
  for (size_t i = 0; i < problems_.size(); ++i) {
    by_id.emplace(problems_[i].id, i);
    ids.push_back(problems_[i].id);
  }
  std::unordered_map<std::string, std::string> hints;  // unknown id -> did-you-mean text

  std::set<std::tuple<std::string, std::string, int32_t>> done;
  for (const auto& r : store_->existing().samples) done.emplace(r.problem, r.key, r.dup);
  std::map<std::string, const ProblemResolution*> resolved;
  for (const auto& p : store_->existing().problems) resolved.emplace(p.problem, &p);

  // (problem, key) -> task; dup counters.
  std::map<std::pair<size_t, std::string>, size_t> task_of;
  int64_t taken = 0;
  for (size_t s = 0; s < samples_.size(); ++s) {
    const Sample& sample = samples_[s];
    auto found = by_id.find(sample.problem_id);
    if (found == by_id.end()) {
      auto hint = hints.find(sample.problem_id);
      if (hint == hints.end()) {
        std::string nearest = NearestProblemId(sample.problem_id, ids);
        hint = hints
                   .emplace(sample.problem_id,
                            nearest.empty() ? "" : fmt::format(" (did you mean {}?)", nearest))
                   .first;
      }
      bad->push_back(BadAt(sample.origin, fmt::format("sample for unknown problem \"{}\"{}",
                                                      sample.problem_id, hint->second)));
      continue;
    }
    const ProblemRecord& problem = problems_[found->second];
    if (ProblemShard(problem.id, options_.shard_count) != options_.shard_index) continue;
    if (problem.tests.empty()) continue;  // the problem itself is reported below
    if (options_.limit >= 0 && taken >= options_.limit) break;
    std::string key = SampleKey(sample);
    auto [it, fresh] = task_of.emplace(std::make_pair(found->second, key), work_.tasks.size());
    if (fresh) {
      Task t;
      t.key = key;
      t.program = ProgramOf(sample, problem);
      if (long bad_at = FindInvalidUtf8(t.program.code); bad_at >= 0) {
        bad->push_back(
            BadAt(sample.origin, fmt::format("program is not valid UTF-8 (byte {})", bad_at)));
        task_of.erase(it);
        continue;
      }
      if (t.program.code.size() > options_.max_program_bytes) {
        bad->push_back(
            BadAt(sample.origin, fmt::format("program of {} bytes exceeds --max-program-bytes {}",
                                             t.program.code.size(), options_.max_program_bytes)));
        task_of.erase(it);
        continue;
      }
      if (work_index[found->second] < 0) {
        work_index[found->second] = static_cast<int64_t>(work_.problems.size());
        WorkProblem wp;
        wp.record = &problem;
        wp.cpp = problem.language == "cpp";
        auto r = resolved.find(problem.id);
        if (r != resolved.end()) {
          wp.resolved = true;
          wp.resolution = *r->second;
        }
        work_.problems.push_back(std::move(wp));
      }
      t.problem = static_cast<size_t>(work_index[found->second]);
      work_.tasks.push_back(std::move(t));
    }
    Task& t = work_.tasks[it->second];
    Item item;
    item.sample = s;
    item.key = key;
    item.dup = static_cast<int32_t>(t.items.size());
    item.done = done.count({problem.id, key, item.dup}) > 0;
    t.items.push_back(item);
    ++taken;
  }
  for (const auto& p : problems_) {
    if (p.tests.empty() && ProblemShard(p.id, options_.shard_count) == options_.shard_index) {
      bad->push_back(BadAt(p.origin, fmt::format("problem {} has no tests", p.id)));
    }
  }
  // Tasks grouped by problem (problem order = first sample), keys ascending within one: the
  // reference cache stays hot and the stand-in search can walk keys in order.
  std::vector<size_t> order(work_.tasks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Task& x = work_.tasks[a];
    const Task& y = work_.tasks[b];
    return std::tie(x.problem, x.key) < std::tie(y.problem, y.key);
  });
  std::vector<Task> sorted;
  sorted.reserve(order.size());
  for (size_t i : order) sorted.push_back(std::move(work_.tasks[i]));
  work_.tasks = std::move(sorted);
  for (size_t i = 0; i < work_.tasks.size(); ++i) {
    work_.problems[work_.tasks[i].problem].tasks.push_back(i);
  }
  stats_.problems = static_cast<int64_t>(work_.problems.size());
  stats_.samples = taken;
  for (const Task& t : work_.tasks) {
    for (const Item& i : t.items) stats_.samples_done_before += i.done ? 1 : 0;
  }
}

Status Runner::StoreBad(const std::vector<BadRecord>& bad) {
  std::set<std::tuple<std::string, int64_t, std::string>> known;
  for (const auto& b : store_->existing().bad) known.emplace(b.file, b.line, b.message);
  for (const auto& b : bad) {
    if (known.emplace(b.file, b.line, b.message).second) {
      EGCA_RETURN_IF_ERROR(store_->AppendBad(b));
    }
  }
  stats_.bad_records = static_cast<int64_t>(known.size());
  return Status::Ok();
}

StatusOr<tracer::ProgramResult> Runner::Grade(const WorkProblem& p, const std::string& program,
                                              int worker) {
  tracer::RunOptions run = options_.router.run;
  run.trace_mode = tracer::TraceMode::kNone;
  run.stop_on_first_failure = true;
  if (p.cpp) return cpp_executors_[worker]->RunAll(program, p.record->tests, run);
  run.apps_import_header = run.apps_import_header || p.record->apps_conventions;
  return executors_[worker]->RunAll(program, p.record->tests, run);
}

// A C++ program "parses" for the purpose of being a reference when it is not empty: its
// compile is part of grading (a reference that does not compile fails its tests).
bool Parses(const WorkProblem& p, const std::string& program) {
  if (p.cpp) return program.find_first_not_of(" \t\r\n") != std::string::npos;
  return diff::PreparedProgram::Build(program).ok();
}

Status Runner::Resolve(WorkProblem& p, int worker) {
  const ProblemRecord& problem = *p.record;
  ProblemResolution& res = p.resolution;
  res.problem = problem.id;
  res.dataset = problem.dataset;
  res.difficulty = problem.difficulty;
  res.kind = ProblemKind(problem);
  res.tests = static_cast<int32_t>(problem.tests.size());
  res.references = static_cast<int32_t>(problem.references.size());
  for (size_t i = 0; i < problem.references.size(); ++i) {
    const std::string& ref = problem.references[i];
    if (!p.cpp) {
      if (auto built = diff::PreparedProgram::Build(ref); !built.ok()) {
        if (!res.reference_failed) {
          res.reference_failed = true;
          res.reference_failure = fmt::format("reference {}: {}", i + 1, built.status().message());
        }
        continue;
      }
    }
    EGCA_ASSIGN_OR_RETURN(tracer::ProgramResult graded, Grade(p, ref, worker));
    if (graded.all_passed()) {
      res.reference = ReferenceKind::kGiven;
      res.reference_index = static_cast<int32_t>(i);
      return Status::Ok();
    }
    if (!res.reference_failed) {
      res.reference_failed = true;
      res.reference_failure = fmt::format("reference {}: {}", i + 1, FirstFailure(graded));
    }
  }
  // Stand-in: the passing candidate with the smallest key (tasks are in key order).
  for (size_t ti : p.tasks) {
    const Task& t = work_.tasks[ti];
    if (!Parses(p, t.program.code)) continue;
    EGCA_ASSIGN_OR_RETURN(tracer::ProgramResult graded, Grade(p, t.program.code, worker));
    if (graded.all_passed()) {
      res.reference = ReferenceKind::kStandIn;
      res.stand_in_key = t.key;
      return Status::Ok();
    }
  }
  res.reference = ReferenceKind::kNone;
  return Status::Ok();
}

Status Runner::SetUpRouting(WorkProblem& p) {
  const ProblemRecord& problem = *p.record;
  const ProblemResolution& res = p.resolution;
  p.routing.tests = problem.tests;
  switch (res.reference) {
    case ReferenceKind::kGiven:
      if (res.reference_index < 0 ||
          static_cast<size_t>(res.reference_index) >= problem.references.size()) {
        return FailedPrecondition(
            fmt::format("problem {}: the store names reference {} but the data set has {}",
                        problem.id, res.reference_index + 1, problem.references.size()));
      }
      p.routing.reference = problem.references[res.reference_index];
      break;
    case ReferenceKind::kStandIn: {
      bool found = false;
      for (size_t ti : p.tasks) {
        if (work_.tasks[ti].key == res.stand_in_key) {
          p.routing.reference = work_.tasks[ti].program.code;
          found = true;
          break;
        }
      }
      if (!found) {
        return FailedPrecondition(fmt::format(
            "problem {}: the store's stand-in sample {} is not among this run's samples",
            problem.id, res.stand_in_key));
      }
      break;
    }
    case ReferenceKind::kNone:
      // The router needs a program to compare with; with the I_cmp gate and localization
      // off, an empty module only makes it grade. (egca::cpp takes an empty reference.)
      p.routing.reference = p.cpp ? "" : "pass\n";
      break;
  }
  // C++ problems: the same vocabulary, checked on Clang facts (egca/cpp/analysis.h); the
  // extraction from a reference reads Python, so a C++ problem gets constraints from a
  // file only.
  if (p.cpp) {
    if (options_.constraint_source != ConstraintSource::kFile) return Status::Ok();
    auto it = options_.constraints_file.find(problem.id);
    if (it == options_.constraints_file.end()) return Status::Ok();
    auto set = cpp::MakeCppConstraintSet(it->second);
    if (!set.ok()) return set.status().WithContext("problem " + problem.id);
    p.routing.constraints = std::move(set).value();
    return Status::Ok();
  }
  switch (options_.constraint_source) {
    case ConstraintSource::kNone:
      break;
    case ConstraintSource::kExtract: {
      if (res.reference == ReferenceKind::kNone) break;
      auto specs =
          gates::ExtractConstraints(p.routing.reference, options_.extraction, problem.prompt);
      if (!specs.ok()) return specs.status().WithContext("problem " + problem.id);
      EGCA_ASSIGN_OR_RETURN(p.routing.constraints, gates::MakeConstraintSet(specs.value()));
      break;
    }
    case ConstraintSource::kFile: {
      auto it = options_.constraints_file.find(problem.id);
      if (it == options_.constraints_file.end()) break;
      auto set = gates::MakeConstraintSet(it->second);
      if (!set.ok()) return set.status().WithContext("problem " + problem.id);
      p.routing.constraints = std::move(set).value();
      break;
    }
  }
  return Status::Ok();
}

Status Runner::RouteTask(Task& t, int worker) {
  WorkProblem& p = work_.problems[t.problem];
  const ProblemRecord& problem = *p.record;
  ReferenceKind kind = p.resolution.reference;
  // An empty sample is graded only: nothing of it to compare or localize (a body sample's
  // program is the prompt alone, whose lines no completion token produced).
  const bool bare = kind == ReferenceKind::kNone || t.program.empty;
  StatusOr<gates::RouteResult> routed = Internal("not routed");
  if (p.cpp) {
    auto cpp_routed = cpp_routers_[worker][bare ? 1 : 0]->Route(t.program.code, p.routing);
    if (cpp_routed.ok()) {
      routed = std::move(cpp_routed->route);
    } else {
      routed = cpp_routed.status();
    }
  } else {
    gates::Router& r = *routers_[worker][problem.apps_conventions ? 1 : 0][bare ? 1 : 0];
    routed = r.Route(t.program.code, p.routing);
  }
  if (!routed.ok()) {
    Error(fmt::format("{}: {}: {}", samples_[t.items.front().sample].origin, problem.id,
                      routed.status().ToString()));
    return Status::Ok();
  }
  std::vector<SampleRecord> records;
  bool first = true;
  for (const Item& item : t.items) {
    if (item.done) continue;
    SampleRecord rec = MakeRecord(samples_[item.sample], problem, t.program, routed.value(), kind);
    rec.dup = item.dup;
    rec.stand_in =
        kind == ReferenceKind::kStandIn && item.key == p.resolution.stand_in_key && item.dup == 0;
    if (!first) {
      rec.grade_seconds = rec.localize_seconds = 0;
      rec.shared_result = true;
    }
    first = false;
    if (options_.on_record) options_.on_record(item.sample, rec, routed.value(), p.routing);
    records.push_back(std::move(rec));
  }
  EGCA_RETURN_IF_ERROR(store_->AppendSamples(records));
  for (const auto& rec : records) progress_->Add(rec.mode);
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_.samples_written += static_cast<int64_t>(records.size());
  ++stats_.programs_routed;
  return Status::Ok();
}

Status Runner::Parallel(size_t n, const std::function<Status(int, size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first_error;
  std::atomic<bool> failed{false};
  auto body = [&](int w) {
    while (!failed.load() && !Stopped()) {
      size_t i = next.fetch_add(1);
      if (i >= n) return;
      Status s = fn(w, i);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = s;
        failed = true;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < workers_; ++w) threads.emplace_back(body, w);
  for (auto& t : threads) t.join();
  return first_error;
}

StatusOr<RunStats> Runner::Run(const std::vector<BadRecord>& load_bad) {
  auto start = Clock::now();
  std::string started = UtcNow();
  std::vector<BadRecord> bad = load_bad;
  Plan(&bad);
  // The loaders' bad records were printed by the caller; the ones matching found (an
  // unknown problem id, with its did-you-mean hint; an oversized program) are printed here.
  constexpr size_t kMaxPrinted = 20;
  for (size_t i = load_bad.size(); i < bad.size(); ++i) {
    if (i - load_bad.size() == kMaxPrinted) {
      fmt::print(stderr, "egca-batch: ... {} more bad records (all of them are in the report)\n",
                 bad.size() - i);
      break;
    }
    fmt::print(stderr, "egca-batch: bad record: {}\n", bad[i].ToString());
  }
  EGCA_RETURN_IF_ERROR(StoreBad(bad));

  progress_ =
      std::make_unique<Progress>(stats_.samples, stats_.samples_done_before, options_.progress);
  for (const auto& r : store_->existing().samples) progress_->Seed(r.mode, 1);
  std::vector<size_t> pending;
  for (size_t i = 0; i < work_.tasks.size(); ++i) {
    if (work_.tasks[i].pending()) pending.push_back(i);
  }
  std::vector<size_t> to_resolve;
  std::vector<char> needed(work_.problems.size(), 0);
  for (size_t i : pending) needed[work_.tasks[i].problem] = 1;
  for (size_t p = 0; p < work_.problems.size(); ++p) {
    if (needed[p] && !work_.problems[p].resolved) to_resolve.push_back(p);
  }

  int workers = options_.workers > 0
                    ? options_.workers
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const auto& borrowed = options_.python_executors;
  if (!borrowed.empty()) workers = std::min(workers, static_cast<int>(borrowed.size()));
  workers = static_cast<int>(std::min<size_t>(workers, std::max<size_t>(1, pending.size())));
  stats_.workers = workers;
  bool any_python = false, any_cpp = false;
  for (size_t i : pending) {
    const bool cpp = work_.problems[work_.tasks[i].problem].cpp;
    any_cpp = any_cpp || cpp;
    any_python = any_python || !cpp;
  }
  if (!pending.empty()) {
    workers_ = workers;
    // Both executors start their servers as programs of their own (exec mode), so no
    // candidate sees this process's memory; in fork mode (ExecutorOptions::server_start)
    // the servers are forks of it and must be created before any thread exists.
    for (int w = 0; w < workers && any_python; ++w) {
      if (!borrowed.empty()) {
        if (borrowed[w] == nullptr) return InvalidArgument("RunnerOptions::python_executors: null");
        executors_.push_back(borrowed[w]);
        continue;
      }
      EGCA_ASSIGN_OR_RETURN(auto executor, tracer::Executor::Create(options_.executor));
      executors_.push_back(executor.get());
      owned_executors_.push_back(std::move(executor));
    }
    for (int w = 0; w < workers && any_cpp; ++w) {
      EGCA_ASSIGN_OR_RETURN(auto executor, cpp::CppExecutor::Create({}));
      cpp::CppRouterOptions o;
      o.run = options_.router.run;
      o.runtime_error_is_logic = options_.router.runtime_error_is_logic;
      o.localize = options_.router.localize;
      o.seed = options_.router.divergence.random_seed;
      o.check_comparability = options_.router.check_comparability;
      o.structure = options_.router.structure;
      o.structure.threshold = options_.cpp_comparability_threshold;  // C++'s own calibration
      o.passing_bypasses_gates = options_.router.passing_bypasses_gates;
      std::array<std::unique_ptr<cpp::CppRouter>, 2> routers;
      routers[0] = std::make_unique<cpp::CppRouter>(executor.get(), o);
      o.localize = false;  // no reference: grade only
      o.check_comparability = false;
      routers[1] = std::make_unique<cpp::CppRouter>(executor.get(), o);
      cpp_routers_.push_back(std::move(routers));
      cpp_executors_.push_back(std::move(executor));
    }
  }
  for (tracer::Executor* e : executors_) {
    routers_.emplace_back();
    for (int apps = 0; apps < 2; ++apps) {
      for (int bare = 0; bare < 2; ++bare) {
        gates::RouterOptions o = options_.router;
        o.run.apps_import_header = options_.router.run.apps_import_header || apps == 1;
        if (bare == 1) {
          // No reference: grade only (an empty module is not a structure to compare with).
          o.check_comparability = false;
          o.localize = false;
        }
        routers_.back()[apps][bare] = std::make_unique<gates::Router>(e, o, cache_);
      }
    }
  }

  std::atomic<size_t> resolved_count{0};
  Status s = Parallel(to_resolve.size(), [&](int w, size_t i) -> Status {
    WorkProblem& p = work_.problems[to_resolve[i]];
    EGCA_RETURN_IF_ERROR(Resolve(p, w));
    EGCA_RETURN_IF_ERROR(store_->AppendProblem(p.resolution));
    p.resolved = true;
    size_t n = ++resolved_count;
    progress_->Stage(fmt::format("setting up references: {}/{} problems", n, to_resolve.size()));
    return Status::Ok();
  });
  if (s.ok() && !Stopped()) {
    for (size_t p = 0; p < work_.problems.size(); ++p) {
      if (!needed[p]) continue;
      WorkProblem& wp = work_.problems[p];
      if (!wp.resolved) continue;
      Status set_up = SetUpRouting(wp);
      if (!set_up.ok()) return set_up;
    }
    s = Parallel(pending.size(), [&](int w, size_t i) -> Status {
      Task& t = work_.tasks[pending[i]];
      return RouteTask(t, w);
    });
  }
  Status flushed = store_->Flush();
  if (!s.ok()) return s;
  EGCA_RETURN_IF_ERROR(flushed);
  stats_.interrupted = Stopped();
  // Problems of this run by how they were set up (resolutions from earlier sessions too).
  for (const WorkProblem& p : work_.problems) {
    if (!p.resolved) continue;
    stats_.stand_ins += p.resolution.reference == ReferenceKind::kStandIn;
    stats_.no_reference += p.resolution.reference == ReferenceKind::kNone;
    stats_.failed_references += p.resolution.reference_failed;
  }
  stats_.reference_traces = static_cast<int64_t>(cache_->trace_misses());
  stats_.reference_trace_hits = static_cast<int64_t>(cache_->trace_hits());
  stats_.wall_seconds = Since(start);
  progress_->Finish();
  SessionRecord session;
  session.wall_seconds = stats_.wall_seconds;
  session.samples_routed = stats_.samples_written;
  session.programs_routed = stats_.programs_routed;
  session.workers = workers;
  session.load_average = LoadAverage();
  session.started = started;
  session.host = HostName();
  if (stats_.samples_written > 0 || stats_.programs_routed > 0) {
    EGCA_RETURN_IF_ERROR(store_->AppendSession(session));
    EGCA_RETURN_IF_ERROR(store_->Flush());
  }
  return stats_;
}

}  // namespace

StatusOr<RunStats> RunBatch(const std::vector<ProblemRecord>& problems,
                            const std::vector<Sample>& samples,
                            const std::vector<BadRecord>& load_bad, ResultStore* store,
                            const RunnerOptions& options) {
  Runner runner(problems, samples, store, options);
  return runner.Run(load_bad);
}

}  // namespace egca::batch
