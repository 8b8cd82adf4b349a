// What the caller's memory costs each sandboxed run: tracer::Executor with its fork
// server forked from the caller (ServerStart::kFork) against the exec'd server program
// (kExec, egca-py-server), each from an empty caller and from a caller holding
// --caller-mb MiB of touched memory (a trainer with its model), all in one process.
//
//   caller_memory_bench [--caller-mb 4096] [--runs 200] [--slow-runs 10] [--reps 7]
//
// The four executors are created in this order: fork and exec while the process is small,
// then the process allocates and touches --caller-mb MiB, then fork and exec again. Each
// repetition runs --runs tests on every executor in turn (--slow-runs on the forked
// server of the big caller, whose runs take 100x longer), interleaved so that load
// changes on a shared machine hit all four alike, in an order that changes each
// repetition (so none always follows the big fork's teardown); each row reports medians
// over the repetitions of
// the mean wall time per test as the caller sees it (Executor::Run, IPC included) and the
// tests per second. The test: an empty program with an empty check() (the executor's
// floor: fork, isolation, harness). The address-space limit is raised by --caller-mb so
// that a fork of the big caller can run at all.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "egca/tracer/executor.h"
#include "../common/stats.h"

namespace {

using egca::tracer::Executor;
using egca::tracer::ExecutorOptions;
using egca::tracer::RunOptions;
using egca::tracer::ServerStart;
using egca::tracer::TestCase;
using Clock = std::chrono::steady_clock;

struct Config {
  std::string name;
  ServerStart start = ServerStart::kExec;
  bool big_caller = false;
  std::unique_ptr<Executor> executor;
  double create_ms = 0;
  std::vector<double> wall_ms;      // per repetition: mean wall per test
  std::vector<double> fork_ms;      // per repetition: mean ChildPhases::fork
  std::vector<double> exit_ms;      // per repetition: mean ChildPhases::exit
  std::vector<double> run_ms;       // every run: wall as the caller sees it
  std::vector<double> cpu_ms;       // every run: the child's CPU time
  int failures = 0;
};

using egca::bench::Median;

bool Create(Config* c) {
  ExecutorOptions options;
  options.server_start = c->start;
  const auto begin = Clock::now();
  auto executor = Executor::Create(options);
  c->create_ms = std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
  if (!executor.ok()) {
    fmt::print(stderr, "caller_memory_bench: {}: {}\n", c->name, executor.status().ToString());
    return false;
  }
  c->executor = std::move(executor).value();
  return true;
}

void RunRepetition(Config* c, const TestCase& test, const RunOptions& options, int runs) {
  double fork = 0, exit = 0;
  const auto begin = Clock::now();
  for (int i = 0; i < runs; ++i) {
    const auto run_begin = Clock::now();
    auto result = c->executor->Run("pass\n", test, options);
    c->run_ms.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - run_begin).count());
    if (!result.ok() || !result->verdict.passed()) {
      ++c->failures;
      continue;
    }
    c->cpu_ms.push_back(1000 * result->verdict.cpu_seconds);
    fork += result->verdict.phases.fork;
    exit += result->verdict.phases.exit;
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
  c->wall_ms.push_back(ms / runs);
  c->fork_ms.push_back(1000 * fork / runs);
  c->exit_ms.push_back(1000 * exit / runs);
}

}  // namespace

int main(int argc, char** argv) {
  long caller_mb = 4096;
  int runs = 200;
  int slow_runs = 10;
  int reps = 7;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--caller-mb") == 0 && has_value) {
      caller_mb = std::atol(argv[++i]);
    } else if (std::strcmp(argv[i], "--runs") == 0 && has_value) {
      runs = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--slow-runs") == 0 && has_value) {
      slow_runs = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--reps") == 0 && has_value) {
      reps = std::atoi(argv[++i]);
    } else {
      fmt::print(stderr,
                 "caller_memory_bench: unknown or incomplete option '{}' (usage: "
                 "[--caller-mb N] [--runs N] [--slow-runs N] [--reps N])\n",
                 argv[i]);
      return 2;
    }
  }
  if (caller_mb < 0 || runs < 1 || slow_runs < 1 || reps < 1) {
    fmt::print(stderr,
               "caller_memory_bench: --caller-mb >= 0, --runs, --slow-runs, --reps >= 1\n");
    return 2;
  }
  std::vector<Config> configs(4);
  for (int i = 0; i < 4; ++i) {
    configs[i].start = i % 2 == 0 ? ServerStart::kFork : ServerStart::kExec;
    configs[i].name = i % 2 == 0 ? "fork" : "exec";
    configs[i].big_caller = i >= 2;
  }
  for (int i = 0; i < 2; ++i) {
    if (!Create(&configs[i])) return 1;
  }
  // The caller's memory: touched, so it is resident and has page tables (as a loaded
  // model has).
  const size_t bytes = static_cast<size_t>(caller_mb) << 20;
  void* heap = nullptr;
  if (bytes > 0) {
    heap = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (heap == MAP_FAILED) {
      fmt::print(stderr, "caller_memory_bench: cannot map {} MiB\n", caller_mb);
      return 1;
    }
    std::memset(heap, 1, bytes);
  }
  for (int i = 2; i < 4; ++i) {
    if (!Create(&configs[i])) return 1;
  }

  RunOptions options;
  options.limits.wall_seconds = 30;
  options.limits.cpu_seconds = 30;
  options.limits.memory_bytes += bytes;  // a fork of the big caller maps it all
  const TestCase test = TestCase::HumanEvalCheck("def check(c):\n    pass\n", "print");
  for (Config& c : configs) RunRepetition(&c, test, options, 2);  // warm-up, not counted
  for (Config& c : configs) {
    c.wall_ms.clear();
    c.fork_ms.clear();
    c.exit_ms.clear();
    c.run_ms.clear();
    c.cpu_ms.clear();
  }
  for (int r = 0; r < reps; ++r) {
    for (int k = 0; k < 4; ++k) {
      // Orders 0123, 3210, 1302, 2031, ...: each executor follows each other one in some
      // repetition.
      static const int kOrders[4][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}};
      const int i = kOrders[r % 4][k];
      RunRepetition(&configs[i], test, options, i == 2 ? slow_runs : runs);
    }
    fmt::print(stderr, "repetition {}/{} done\n", r + 1, reps);
  }

  fmt::print("Executor floor (empty program, empty check), {} runs ({} for fork + big caller) x "
             "{} repetitions per row; caller holds 0 or {} MiB (touched)\n\n",
             runs, slow_runs, reps, caller_mb);
  fmt::print("| {:<6} | {:>10} | {:>9} | {:>11} | {:>7} | {:>11} | {:>12} | {:>7} | {:>7} | {:>8} |\n",
             "server", "caller", "create ms", "wall/run ms", "runs/s", "median run", "child CPU ms",
             "fork ms", "exit ms", "vs empty");
  fmt::print("|{:-<8}|{:-<12}|{:-<11}|{:-<13}|{:-<9}|{:-<13}|{:-<14}|{:-<9}|{:-<9}|{:-<10}|\n", "",
             "", "", "", "", "", "", "", "", "");
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const double wall = Median(c.wall_ms);
    const double base = Median(configs[i % 2].wall_ms);
    fmt::print(
        "| {:<6} | {:>10} | {:>9.1f} | {:>11.2f} | {:>7.1f} | {:>11.2f} | {:>12.2f} | {:>7.2f} | "
        "{:>7.2f} | {:>8} |\n",
        c.name, c.big_caller ? fmt::format("{} MiB", caller_mb) : "empty", c.create_ms, wall,
        1000 / wall, Median(c.run_ms), Median(c.cpu_ms), Median(c.fork_ms), Median(c.exit_ms),
        fmt::format("{:.2f}x", wall / base));
  }
  auto ratio = [&](int a, int b, std::vector<double> Config::*field) {
    return Median(configs[a].*field) / Median(configs[b].*field);
  };
  fmt::print(
      "\nbig caller / empty caller: exec {:.2f}x wall per run (median of repetition means), "
      "{:.2f}x median run, {:.2f}x child CPU; fork {:.2f}x, {:.2f}x, {:.2f}x\n",
      ratio(3, 1, &Config::wall_ms), ratio(3, 1, &Config::run_ms), ratio(3, 1, &Config::cpu_ms),
      ratio(2, 0, &Config::wall_ms), ratio(2, 0, &Config::run_ms), ratio(2, 0, &Config::cpu_ms));
  fmt::print("fork / exec, wall per run: empty caller {:.2f}x, big caller {:.2f}x\n",
             ratio(0, 1, &Config::wall_ms), ratio(2, 3, &Config::wall_ms));
  fmt::print("per-repetition wall/run ms:\n");
  for (const Config& c : configs) {
    fmt::print("  {}/{}: {:.2f}\n", c.name, c.big_caller ? "big" : "empty",
               fmt::join(c.wall_ms, ", "));
  }
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) fmt::print("load average at the end: {:.2f}\n", load[0]);
  int failures = 0;
  for (const Config& c : configs) failures += c.failures;
  if (failures > 0) fmt::print("WARNING: {} runs did not pass\n", failures);
  if (heap != nullptr) munmap(heap, bytes);
  return failures == 0 ? 0 : 1;
}
