// egca-serve's core, without HTTP: the problems loaded at start (and inline ones from
// requests), a fixed pool of executors fed by one bounded job queue, and the routing of one
// sample exactly as egca-batch routes it (same reference choice, gates::Router options,
// shared ReferenceCache, batch::MakeRecord).
//
//   Service s(problems, options);          // starts options.workers executors
//   auto batch = s.Submit(std::move(jobs)); // or kQueueFull / kDraining
//   s.Wait(*batch, deadline);               // false: the time budget ran out (batch cancelled)
//
// Each worker thread owns one tracer::Executor (its own fork server, egca-py-server) and
// its routers; a job is one distinct program of a request (identical samples of one
// problem in one request are routed once, as egca-batch does). A cancelled batch's queued
// jobs are dropped by the workers; a job in hand runs to its end (bounded by the per-test
// limits), so an executor is never lost with a request.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "egca/batch/result.h"
#include "egca/core/status.h"
#include "egca/datasets/problem.h"
#include "egca/datasets/samples.h"
#include "egca/gates/router.h"
#include "egca/tracer/executor.h"

namespace egca::serve {

struct ServiceOptions {
  int workers = 1;
  size_t queue_capacity = 4096;  // jobs (distinct programs) waiting for an executor
  gates::RouterOptions router;   // egca-batch run's (timeout, seed, gates)
  bool extract_constraints = false;
  uint64_t max_program_bytes = 1 << 20;
  size_t max_inline_problems = 1024;  // inline problems kept (then the table starts over)
};

// A problem as the service routes it; reference resolved on first use.
struct ProblemEntry {
  datasets::ProblemRecord record;
  std::mutex mu;  // guards the resolution
  bool resolved = false;
  Status resolve_status;
  batch::ReferenceKind kind = batch::ReferenceKind::kNone;
  gates::Problem routing;  // reference, tests, constraints
};

// One routed sample: the egca-batch record plus what the record does not keep.
struct SampleResult {
  Status status;  // egca's own failure (the executor broke): the sample is not routed
  batch::SampleRecord record;
  std::shared_ptr<const gates::RouteResult> route;
  std::shared_ptr<const ProblemEntry> problem;
};

// The samples of one request.
struct Batch {
  std::vector<std::shared_ptr<ProblemEntry>> problems;  // per sample
  std::vector<datasets::Sample> samples;
  std::vector<SampleResult> results;  // per sample, filled by the workers
  std::atomic<bool> cancelled{false};
  std::mutex mu;
  std::condition_variable done;
  size_t pending_jobs = 0;  // guarded by mu
  // Jobs: distinct (problem, program) -> the samples that share the result.
  struct Job {
    datasets::SampleProgram program;
    std::vector<size_t> samples;
  };
  std::vector<Job> jobs;
};

enum class Admission { kAccepted, kInvalid, kQueueFull, kDraining, kTooLarge };

struct ServiceCounters {
  size_t queue_depth = 0;
  size_t queue_capacity = 0;
  int workers = 0;
  int busy = 0;
  uint64_t jobs_done = 0;
  uint64_t jobs_cancelled = 0;
  uint64_t executor_errors = 0;
  uint64_t reference_traces = 0;
  uint64_t reference_trace_hits = 0;
  uint64_t modes[4] = {0, 0, 0, 0};
  std::map<std::string, uint64_t> verdicts;  // first failing verdict, "OK" when all passed
};

class Service {
 public:
  // Starts the executors (errors: an executor could not start).
  static StatusOr<std::unique_ptr<Service>> Create(std::vector<datasets::ProblemRecord> problems,
                                                   const ServiceOptions& options);
  ~Service();  // stops the workers (jobs in hand finish)

  // A loaded problem by id, or null.
  std::shared_ptr<ProblemEntry> Find(const std::string& id) const;
  // An inline problem {reference, tests, prompt, entry_point}; the same text returns the
  // same entry (its reference is resolved and traced once). Errors: INVALID_ARGUMENT.
  StatusOr<std::shared_ptr<ProblemEntry>> Inline(const std::string& reference,
                                                 const std::string& tests_json,
                                                 const std::string& prompt,
                                                 const std::string& entry_point);
  // Ids of the loaded problems closest to `id` ("" when none is close): for 404 reasons.
  std::string NearestId(const std::string& id) const;

  // Plans the batch's jobs and queues them, all or none. kInvalid: a program is over
  // max_program_bytes or not UTF-8 (`*error` names the sample); kTooLarge: more distinct
  // programs than the queue holds; kQueueFull: not enough room now.
  Admission Submit(const std::shared_ptr<Batch>& batch, Status* error);
  // Waits for every job of `batch` until `deadline`; false: out of time (the batch is
  // cancelled: its queued jobs are dropped).
  bool Wait(Batch& batch, std::chrono::steady_clock::time_point deadline);
  // Refuses new batches from now on (Submit returns kDraining).
  void Drain() { draining_ = true; }
  bool draining() const { return draining_; }

  ServiceCounters Counters() const;
  size_t problem_count() const { return by_id_.size(); }

 private:
  explicit Service(const ServiceOptions& options) : options_(options) {}
  void WorkerLoop(int worker);
  void RunJob(int worker, Batch& batch, size_t job);
  Status Resolve(ProblemEntry& p, int worker);

  struct Worker {
    std::unique_ptr<tracer::Executor> executor;
    // [APPS conventions][no reference]
    std::unique_ptr<gates::Router> routers[2][2];
  };

  ServiceOptions options_;
  std::map<std::string, std::shared_ptr<ProblemEntry>> by_id_;
  std::vector<std::string> ids_;
  std::shared_ptr<gates::ReferenceCache> cache_ = std::make_shared<gates::ReferenceCache>();
  std::vector<Worker> workers_;
  std::vector<std::thread> threads_;

  mutable std::mutex inline_mu_;
  std::map<std::string, std::shared_ptr<ProblemEntry>> inline_;  // by SHA-256 of the parts

  mutable std::mutex mu_;  // the queue and the counters
  std::condition_variable work_;
  std::deque<std::pair<std::shared_ptr<Batch>, size_t>> queue_;
  bool stopping_ = false;
  std::atomic<bool> draining_{false};
  int busy_ = 0;
  uint64_t jobs_done_ = 0, jobs_cancelled_ = 0, executor_errors_ = 0;
  uint64_t modes_[4] = {0, 0, 0, 0};
  std::map<std::string, uint64_t> verdicts_;
};

}  // namespace egca::serve
