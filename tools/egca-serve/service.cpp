#include "service.h"

#include <fmt/format.h>

#include <algorithm>

#include "egca/batch/runner.h"
#include "egca/core/files.h"
#include "egca/core/sha256.h"
#include "egca/diff/divergence.h"
#include "egca/gates/constraints.h"
#include "egca/tracer/test_case.h"

namespace egca::serve {

StatusOr<std::unique_ptr<Service>> Service::Create(std::vector<datasets::ProblemRecord> problems,
                                                   const ServiceOptions& options) {
  std::unique_ptr<Service> s(new Service(options));
  for (auto& p : problems) {
    if (s->by_id_.count(p.id) != 0) continue;  // first wins, as in egca-batch
    auto e = std::make_shared<ProblemEntry>();
    s->ids_.push_back(p.id);
    e->record = std::move(p);
    s->by_id_.emplace(e->record.id, std::move(e));
  }
  const int n = std::max(1, options.workers);
  s->workers_.resize(static_cast<size_t>(n));
  // Every executor before any thread: exec mode needs none of this, fork mode needs it.
  for (auto& w : s->workers_) {
    EGCA_ASSIGN_OR_RETURN(w.executor, tracer::Executor::Create({}));
    for (int apps = 0; apps < 2; ++apps) {
      for (int bare = 0; bare < 2; ++bare) {
        gates::RouterOptions o = options.router;
        o.run.apps_import_header = options.router.run.apps_import_header || apps == 1;
        if (bare == 1) {  // no reference: grade only (as egca-batch)
          o.check_comparability = false;
          o.localize = false;
        }
        w.routers[apps][bare] = std::make_unique<gates::Router>(w.executor.get(), o, s->cache_);
      }
    }
  }
  for (int i = 0; i < n; ++i) s->threads_.emplace_back([p = s.get(), i] { p->WorkerLoop(i); });
  return s;
}

Service::~Service() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  for (auto& t : threads_) t.join();
}

std::shared_ptr<ProblemEntry> Service::Find(const std::string& id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

std::string Service::NearestId(const std::string& id) const {
  return datasets::NearestProblemId(id, ids_);
}

StatusOr<std::shared_ptr<ProblemEntry>> Service::Inline(const std::string& reference,
                                                        const std::string& tests_json,
                                                        const std::string& prompt,
                                                        const std::string& entry_point) {
  // SHA-256 of the length-prefixed parts: two different problems never share an entry (a
  // 64-bit hash here let one request's reference and tests grade another's samples).
  std::string text = "egca-inline-problem/1";
  for (const std::string* part : {&reference, &tests_json, &prompt, &entry_point}) {
    text += fmt::format("\n{}:", part->size());
    text += *part;
  }
  const std::string key = Sha256Hex(text);
  {
    std::lock_guard<std::mutex> lock(inline_mu_);
    auto it = inline_.find(key);
    if (it != inline_.end()) return it->second;
  }
  if (reference.find_first_not_of(" \t\r\n\f\v") == std::string::npos) {
    return InvalidArgument("reference: the program is empty");
  }
  if (auto built = diff::PreparedProgram::Build(reference); !built.ok()) {
    return InvalidArgument("reference: " + built.status().message());
  }
  EGCA_ASSIGN_OR_RETURN(std::vector<tracer::TestCase> tests,
                        tracer::ParseTestsJson(tests_json, "tests"));
  if (tests.empty()) return InvalidArgument("tests: no test given");
  auto e = std::make_shared<ProblemEntry>();
  e->record.id = "inline/" + key;
  e->record.dataset = "inline";
  e->record.prompt = prompt;
  e->record.entry_point = entry_point;
  e->record.tests = std::move(tests);
  e->record.references = {reference};
  e->record.origin = "<request>";
  std::lock_guard<std::mutex> lock(inline_mu_);
  if (inline_.size() >= options_.max_inline_problems) inline_.clear();
  auto [it, fresh] = inline_.emplace(key, e);
  return it->second;
}

Admission Service::Submit(const std::shared_ptr<Batch>& batch, Status* error) {
  Batch& b = *batch;
  b.results.assign(b.samples.size(), {});
  // Distinct programs of one problem are routed once (egca-batch's identical samples): the
  // key is batch::SampleKey, SHA-256 of everything that decides how the sample is read.
  std::map<std::pair<const ProblemEntry*, std::string>, size_t> job_of;
  for (size_t i = 0; i < b.samples.size(); ++i) {
    const ProblemEntry& p = *b.problems[i];
    datasets::SampleProgram program = datasets::ProgramOf(b.samples[i], p.record);
    if (long bad_at = FindInvalidUtf8(program.code); bad_at >= 0) {
      *error = InvalidArgument(
          fmt::format("sample {}: program is not valid UTF-8 (byte {})", i, bad_at));
      return Admission::kInvalid;
    }
    if (program.code.size() > options_.max_program_bytes) {
      *error = InvalidArgument(fmt::format("sample {}: program of {} bytes exceeds {} bytes", i,
                                           program.code.size(), options_.max_program_bytes));
      return Admission::kInvalid;
    }
    auto [it, fresh] =
        job_of.emplace(std::make_pair(&p, batch::SampleKey(b.samples[i])), b.jobs.size());
    if (fresh) b.jobs.push_back({std::move(program), {}});
    b.jobs[it->second].samples.push_back(i);
  }
  b.pending_jobs = b.jobs.size();
  if (b.jobs.size() > options_.queue_capacity) return Admission::kTooLarge;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (draining_) return Admission::kDraining;
    if (queue_.size() + b.jobs.size() > options_.queue_capacity) return Admission::kQueueFull;
    for (size_t j = 0; j < b.jobs.size(); ++j) queue_.emplace_back(batch, j);
  }
  work_.notify_all();
  return Admission::kAccepted;
}

bool Service::Wait(Batch& batch, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(batch.mu);
  if (batch.done.wait_until(lock, deadline, [&] { return batch.pending_jobs == 0; })) return true;
  batch.cancelled = true;  // queued jobs are dropped; the ones in hand finish
  return false;
}

void Service::WorkerLoop(int worker) {
  for (;;) {
    std::shared_ptr<Batch> batch;
    size_t job = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      batch = std::move(queue_.front().first);
      job = queue_.front().second;
      queue_.pop_front();
      if (batch->cancelled) {
        ++jobs_cancelled_;
        continue;
      }
      ++busy_;
    }
    RunJob(worker, *batch, job);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
      ++jobs_done_;
    }
    {
      std::lock_guard<std::mutex> lock(batch->mu);
      --batch->pending_jobs;
    }
    batch->done.notify_all();
  }
}

// egca-batch's choice without the stand-in (a server cannot wait for other samples of the
// problem): the first of the data set's references that parses and passes every test;
// with none, the samples are graded only (ReferenceKind::kNone).
Status Service::Resolve(ProblemEntry& p, int worker) {
  const datasets::ProblemRecord& problem = p.record;
  tracer::RunOptions run = options_.router.run;
  run.apps_import_header = run.apps_import_header || problem.apps_conventions;
  run.trace_mode = tracer::TraceMode::kNone;
  run.stop_on_first_failure = true;
  p.routing.tests = problem.tests;
  p.kind = batch::ReferenceKind::kNone;
  for (const std::string& ref : problem.references) {
    if (!diff::PreparedProgram::Build(ref).ok()) continue;
    EGCA_ASSIGN_OR_RETURN(tracer::ProgramResult graded,
                          workers_[worker].executor->RunAll(ref, problem.tests, run));
    if (graded.all_passed()) {
      p.routing.reference = ref;
      p.kind = batch::ReferenceKind::kGiven;
      break;
    }
  }
  if (p.kind == batch::ReferenceKind::kNone) p.routing.reference = "pass\n";
  if (options_.extract_constraints && p.kind != batch::ReferenceKind::kNone) {
    gates::ExtractionPolicy policy;
    auto specs = gates::ExtractConstraints(p.routing.reference, policy, problem.prompt);
    if (!specs.ok()) return specs.status().WithContext("problem " + problem.id);
    EGCA_ASSIGN_OR_RETURN(p.routing.constraints, gates::MakeConstraintSet(specs.value()));
  }
  return Status::Ok();
}

void Service::RunJob(int worker, Batch& batch, size_t job_index) {
  Batch::Job& job = batch.jobs[job_index];
  const size_t first = job.samples.front();
  std::shared_ptr<ProblemEntry> entry = batch.problems[first];
  Status status;
  {
    std::lock_guard<std::mutex> lock(entry->mu);
    if (!entry->resolved) {
      entry->resolve_status = Resolve(*entry, worker);
      entry->resolved = entry->resolve_status.ok();  // an executor failure is retried
    }
    status = entry->resolve_status;
  }
  StatusOr<gates::RouteResult> routed = status;
  if (status.ok()) {
    const bool bare = entry->kind == batch::ReferenceKind::kNone || job.program.empty;
    gates::Router& r =
        *workers_[worker].routers[entry->record.apps_conventions ? 1 : 0][bare ? 1 : 0];
    routed = r.Route(job.program.code, entry->routing);
  }
  if (!routed.ok()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++executor_errors_;
    }
    for (size_t s : job.samples) batch.results[s].status = routed.status();
    return;
  }
  auto route = std::make_shared<const gates::RouteResult>(std::move(routed).value());
  bool copy = false;
  int32_t dup = 0;
  for (size_t s : job.samples) {
    SampleResult& out = batch.results[s];
    out.record =
        batch::MakeRecord(batch.samples[s], entry->record, job.program, *route, entry->kind);
    out.record.dup = dup++;
    if (copy) {
      out.record.grade_seconds = out.record.localize_seconds = 0;
      out.record.shared_result = true;
    }
    copy = true;
    out.route = route;
    out.problem = entry;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t s : job.samples) {
    const batch::SampleRecord& rec = batch.results[s].record;
    ++modes_[static_cast<int>(rec.mode)];
    ++verdicts_[rec.verdict.empty() ? "OK" : rec.verdict.substr(0, rec.verdict.find(' '))];
  }
}

ServiceCounters Service::Counters() const {
  ServiceCounters c;
  std::lock_guard<std::mutex> lock(mu_);
  c.queue_depth = queue_.size();
  c.queue_capacity = options_.queue_capacity;
  c.workers = static_cast<int>(workers_.size());
  c.busy = busy_;
  c.jobs_done = jobs_done_;
  c.jobs_cancelled = jobs_cancelled_;
  c.executor_errors = executor_errors_;
  std::copy(std::begin(modes_), std::end(modes_), std::begin(c.modes));
  c.verdicts = verdicts_;
  c.reference_traces = cache_->trace_misses();
  c.reference_trace_hits = cache_->trace_hits();
  return c;
}

}  // namespace egca::serve
