// The batch runner: routes every (problem, sample) pair of a run through gates::Router (or,
// for problems whose language is "cpp", cpp::CppRouter: clang, the same sandbox, Clang CFGs)
// with N workers and appends one SampleRecord per sample to a ResultStore.
//
//   auto store = ResultStore::Open(dir, config);
//   RunnerOptions o;  o.workers = 8;  o.router.run.limits.wall_seconds = 5;
//   auto stats = RunBatch(problems, samples, load_bad, store->get(), o);
//
// What happens, in order:
//   1. Samples are matched to problems (an unknown problem id, a non-UTF-8 or oversized
//      program is a bad record: reported, stored, skipped), filtered to the shard
//      (ProblemShard(problem id, N) == i) and cut to `limit`. Identical samples of a problem
//      (same model, kind and completion) are one program: it is routed once and every copy
//      gets its own record (dup = 0, 1, ...). Keys already in the store are skipped.
//   2. Every problem with work left gets its reference: the first of the data set's
//      references that passes all of the problem's tests; a reference that fails them is
//      recorded (ProblemResolution::reference_failed); with none left, the stand-in is the
//      passing candidate with the smallest sample key (the problem's samples are graded in
//      key order until one passes: independent of sharding and of interruption), and with
//      no passing candidate the problem's samples are routed without a reference (no I_cmp
//      gate, no localization). One ProblemResolution line per problem, before its samples;
//      a resumed run reuses it.
//   3. Programs are routed grouped by problem (the shared ReferenceCache traces each
//      reference once per test); each worker owns one tracer::Executor (one fork server,
//      all created before any thread starts, or borrowed: RunnerOptions::python_executors)
//      and its routers; with C++ problems also one
//      cpp::CppExecutor and its CppRouters. C++ problems take constraints from a file only
//      (ConstraintSource::kFile, checked by cpp::MakeCppConstraintSet).
//
// A candidate failing in any way is a record. egca's own failures on one program (the
// executor broke) are counted in RunStats::errors and printed; the program stays pending
// and a restart retries it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "egca/batch/records.h"
#include "egca/batch/progress.h"
#include "egca/batch/result.h"
#include "egca/batch/store.h"
#include "egca/core/status.h"
#include "egca/cpp/router.h"
#include "egca/gates/constraints.h"
#include "egca/gates/router.h"
#include "egca/tracer/executor.h"

namespace egca::batch {

enum class ConstraintSource {
  kNone,     // I_C = 1 for every sample
  kExtract,  // gates::ExtractConstraints from the reference used (given or stand-in)
  kFile,     // RunnerOptions::constraints_file (problems absent from it: none)
};

struct RunnerOptions {
  int workers = 0;  // 0: std::thread::hardware_concurrency()
  gates::RouterOptions router;
  // I_cmp threshold of C++ problems (router.structure's is Python's).
  double cpp_comparability_threshold = cpp::kCppComparabilityThreshold;
  tracer::ExecutorOptions executor;
  ConstraintSource constraint_source = ConstraintSource::kNone;
  gates::ConstraintsByProblem constraints_file;
  gates::ExtractionPolicy extraction;
  int32_t shard_index = 0;
  int32_t shard_count = 1;
  int64_t limit = -1;                    // samples (after the shard filter); -1: all
  uint64_t max_program_bytes = 1 << 20;  // larger programs are bad records
  ProgressOptions progress;
  // Library use (the Python package's persistent pool): the Python executors to run on,
  // borrowed, one per worker; they must outlive RunBatch and serve no other call while it
  // runs. When given, RunBatch starts no Python executor of its own and uses at most
  // python_executors.size() workers. Empty: one new Executor per worker (egca-batch).
  std::vector<tracer::Executor*> python_executors;
  // Set from a signal handler: workers finish the program in hand, the store is flushed and
  // RunBatch returns (RunStats::interrupted). Borrowed; may be null.
  const std::atomic<bool>* stop = nullptr;
  // Library use (the Python package): called by the worker that routed a program, once per
  // record written for it, with the index of the record's sample in `samples`, the full
  // route (what the store does not keep: per-test verdicts, the divergence with states) and
  // the problem as routed (reference, tests). Called from several threads at once.
  std::function<void(size_t sample, const SampleRecord& record, const gates::RouteResult& route,
                     const gates::Problem& routed)>
      on_record;
};

struct RunStats {
  int64_t problems = 0;             // problems in the shard that have samples
  int64_t samples = 0;              // samples in this run (shard, limit)
  int64_t samples_done_before = 0;  // already in the store
  int64_t samples_written = 0;      // records written by this session
  int64_t programs_routed = 0;      // distinct programs routed by this session
  int64_t bad_records = 0;          // bad records of this run (loaders' and the runner's)
  int64_t errors = 0;               // egca failures (programs left pending)
  int64_t stand_ins = 0;            // problems routed against a stand-in
  int64_t no_reference = 0;         // problems routed without any reference
  int64_t failed_references = 0;    // problems whose given reference failed its tests
  // Reference traces: computed (misses) and reused (hits) by this session's routers.
  int64_t reference_traces = 0;
  int64_t reference_trace_hits = 0;
  bool interrupted = false;
  double wall_seconds = 0;
  int32_t workers = 0;
};

// Runs the batch. `load_bad` are the loaders' bad records (stored once). Status errors:
// the executors could not be started, or the store could not be written.
StatusOr<RunStats> RunBatch(const std::vector<ProblemRecord>& problems,
                            const std::vector<Sample>& samples,
                            const std::vector<BadRecord>& load_bad, ResultStore* store,
                            const RunnerOptions& options);

// ProblemResolution::kind of a problem, from its tests and starter code.
std::string ProblemKind(const ProblemRecord& problem);

// The sample key: lowercase hex SHA-256 of everything that decides how the sample is read
// and recorded: "egca-sample/2\nmodel <n>:<model>\nread <r>\ncompletion <n>:<completion>",
// r = "detect" (Sample::detect_body), "body" (completion_is_body) or "program", <n> the
// byte length of the field that follows. Two samples share a result only when their keys
// (and problem) are equal.
std::string SampleKey(const Sample& sample);

// The record of one routed program (exposed for tests): identity fields from `sample`,
// spans mapped into the completion through `program`.
SampleRecord MakeRecord(const Sample& sample, const ProblemRecord& problem,
                        const SampleProgram& program, const gates::RouteResult& route,
                        ReferenceKind reference);

// Relative position of a program line within the generated code: lines
// [first_generated_line, last_generated_line] map to [0, 1) as
// (line - first) / (last - first + 1); nullopt for a line before the generated code.
std::optional<double> RelativePosition(int32_t line, int32_t first_generated_line,
                                       int32_t last_generated_line);

// K: execution boundaries (block granularity) summed over every scope of `program`;
// nullopt if it does not parse.
std::optional<int32_t> CountBoundaries(std::string_view program);

}  // namespace egca::batch
