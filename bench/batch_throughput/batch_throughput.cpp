// egca-batch's engine (RunBatch: store, records, K, dedup of identical samples, N workers)
// against the loop one would write by hand (one Router, every sample in turn, no store), on
// the same CodeT samples in the same run:
//
//   batch_throughput [--problems P] [--workers N] [--timeout S]
//
// Samples: all 100 CodeT (CodeGen-16B) samples of the first P HumanEval problems. Passes:
//   loop      one Executor + Router, each distinct program routed once in input order (the
//             baseline: what RunBatch routes, without store, records, K or workers)
//   batch/1   RunBatch with 1 worker into a fresh store
//   batch/N   RunBatch with N workers into a fresh store
//   loop      again (the baseline is the mean of both loop passes: load drifts)
// Per pass: wall seconds, samples/s, ratio of samples/s to the baseline, and for the batch
// passes the distinct programs routed (identical samples are routed once).
#include <fmt/format.h>
#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "egca/batch/records.h"
#include "egca/batch/runner.h"
#include "egca/batch/store.h"
#include "egca/gates/router.h"

namespace {

using namespace egca::batch;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"egca-batch engine vs a plain router loop"};
  int problems_wanted = 8, workers = 2;
  double timeout = 5;
  app.add_option("--problems", problems_wanted, "HumanEval problems (100 samples each)");
  app.add_option("--workers", workers, "workers of the batch/N pass");
  app.add_option("--timeout", timeout, "per-test limit, seconds");
  CLI11_PARSE(app, argc, argv);

  std::string data = EGCA_DATA_DIR;
  LoadReport pr, sr;
  DatasetOptions dopts;
  dopts.format = DatasetFormat::kHumanEval;
  dopts.limit = problems_wanted;
  auto problems = LoadProblems(data + "/humaneval/HumanEval.jsonl.gz", dopts, &pr);
  if (!problems.ok()) {
    std::cerr << "batch_throughput: " << problems.status().ToString() << "\n";
    return 2;
  }
  auto samples =
      ConvertSamples(data + "/samples/codet/HumanEval_codegen16B_temp0.8_topp0.95_num100.jsonl.gz",
                     SampleSource::kCodeT, problems.value(), {}, &sr);
  if (!samples.ok()) {
    std::cerr << "batch_throughput: " << samples.status().ToString() << "\n";
    return 2;
  }
  // Samples of the problems left out are unmatched (reported by the converter, not kept).
  const size_t n = samples->size();
  RunnerOptions options;
  options.router.run.limits.wall_seconds = timeout;
  options.router.run.limits.cpu_seconds = timeout;
  options.progress.enabled = false;

  // Executors for the loop pass, created before any thread. Its start-up is timed apart:
  // RunBatch starts its own executors inside its timed pass.
  auto create_start = Clock::now();
  auto executor = egca::tracer::Executor::Create({});
  double create_seconds = Since(create_start);
  if (!executor.ok()) {
    std::cerr << "batch_throughput: " << executor.status().ToString() << "\n";
    return 1;
  }
  std::map<std::string, egca::gates::Problem> by_id;
  for (const auto& p : problems.value()) {
    egca::gates::Problem g;
    g.reference = p.references.front();
    g.tests = p.tests;
    by_id[p.id] = g;
  }
  std::map<std::string, const ProblemRecord*> records;
  for (const auto& p : problems.value()) records[p.id] = &p;
  // The loop routes each distinct program once too (identical samples are the cheap, short
  // ones: routing them again would flatter the engine's dedup, not measure its overhead).
  std::vector<const Sample*> distinct;
  {
    std::set<std::pair<std::string, std::string>> seen;
    for (const auto& s : samples.value()) {
      if (seen.emplace(s.problem_id, SampleKey(s)).second) distinct.push_back(&s);
    }
  }
  auto loop = [&]() {
    egca::gates::Router router(executor.value().get(), options.router);
    auto start = Clock::now();
    for (const Sample* sp : distinct) {
      const Sample& s = *sp;
      auto routed = router.Route(ProgramOf(s, *records[s.problem_id]).code, by_id[s.problem_id]);
      if (!routed.ok()) std::cerr << routed.status().ToString() << "\n";
    }
    return Since(start);
  };
  char tmpl[] = "/tmp/egca_batch_bench_XXXXXX";
  std::string root = mkdtemp(tmpl);
  int pass = 0;
  auto batch = [&](int w, int64_t* programs) {
    RunConfig config;
    config.egca_version = "bench";
    std::string dir = root + "/store" + std::to_string(pass++);
    auto store = ResultStore::Open(dir, config);
    RunnerOptions o = options;
    o.workers = w;
    auto start = Clock::now();
    auto stats = RunBatch(problems.value(), samples.value(), {}, store.value().get(), o);
    double seconds = Since(start);
    *programs = stats.ok() ? stats->programs_routed : -1;
    return seconds;
  };

  double loop1 = loop();
  int64_t p1 = 0, pn = 0;
  double b1 = batch(1, &p1);
  double bn = batch(workers, &pn);
  double loop2 = loop();
  std::filesystem::remove_all(root);
  double base = (loop1 + loop2) / 2;
  double base_rate = n / base;
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  fmt::print(
      "{} samples of {} problems, per-test timeout {} s, load average {:.2f} {:.2f} {:.2f}\n", n,
      problems->size(), timeout, load[0], load[1], load[2]);
  fmt::print(
      "executor start-up (fork server + warm interpreter): {:.2f} s; RunBatch pays it once "
      "per worker inside its pass\n",
      create_seconds);
  fmt::print("{:<10} {:>9} {:>11} {:>9} {:>10}\n", "pass", "wall s", "samples/s", "ratio",
             "programs");
  auto row = [&](const std::string& name, double s, int64_t programs) {
    fmt::print("{:<10} {:>9.2f} {:>11.1f} {:>8.2f}x {:>10}\n", name, s, n / s, (n / s) / base_rate,
               programs < 0 ? std::string("-") : std::to_string(programs));
  };
  row("loop", loop1, static_cast<int64_t>(distinct.size()));
  row("batch/1", b1, p1);
  row(fmt::format("batch/{}", workers), bn, pn);
  row("loop", loop2, static_cast<int64_t>(distinct.size()));
  return 0;
}
