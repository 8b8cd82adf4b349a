// Executions per second of egca's warm, sandboxed executor over the 164 HumanEval
// canonical solutions with their checks, against the usual evaluation-harness baseline
// measured in the same run: write program + check to a temp file and start a fresh
// /usr/bin/python3.11 process per execution.
//
//   sandbox_throughput_bench [--rounds N] [--baseline-rounds N] [--data DIR]
//   sandbox_throughput_bench --loop floor|humaneval SECONDS [--caller-heap-mb N]
//
// Rows: executor with 1 and 2 workers (trace off), executor with native tracing and with
// the pure-Python settrace baseline tracer (1 worker), fresh-process baseline with 1 and
// 2 workers. Ratios compare equal worker counts. Then where the time of one execution
// goes (ChildPhases and page faults, means).
//
// --loop runs only the executor (1 worker) on the empty program or on HumanEval for
// SECONDS, for profiling (`perf record -a` alongside) and A/B runs; --caller-heap-mb
// makes the calling process hold (and touch) N MB before it starts the pool, as a
// trainer holding its model would (with the executor's exec'd server this no longer
// reaches the runs; bench/caller_memory compares it with a forked server).
#include <algorithm>
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "egca/core/files.h"
#include "egca/tracer/executor.h"

extern char** environ;

namespace {

using egca::tracer::ExecutorPool;
using egca::tracer::ProgramJob;
using egca::tracer::RunOptions;
using egca::tracer::TestCase;
using egca::tracer::TraceMode;
using Clock = std::chrono::steady_clock;

struct Problem {
  std::string task_id;
  std::string source;
  std::string test;
  std::string entry_point;
};

std::vector<Problem> LoadHumanEval(const std::string& data_dir) {
  const std::string path = data_dir + "/humaneval/HumanEval.jsonl.gz";
  auto text = egca::ReadMaybeGzipFile(path);
  if (!text.ok()) {
    fmt::print(stderr, "{}\n", text.status().ToString());
    std::exit(2);
  }
  std::vector<Problem> problems;
  size_t start = 0;
  while (start < text->size()) {
    size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    if (end > start) {
      auto j = nlohmann::json::parse(text->substr(start, end - start));
      problems.push_back(
          {j["task_id"],
           j["prompt"].get<std::string>() + j["canonical_solution"].get<std::string>(), j["test"],
           j["entry_point"]});
    }
    start = end + 1;
  }
  return problems;
}

struct Row {
  Row(std::string name_, int workers_) : name(std::move(name_)), workers(workers_) {}
  std::string name;
  int workers = 1;
  int executions = 0;
  int passed = 0;
  double seconds = 0;
  double child_seconds = 0;  // sum of the children's wall time (fork to reap)
  double child_cpu = 0;
  double minor_faults = 0;            // summed over executions
  egca::sandbox::ChildPhases phases;  // summed over executions
  std::vector<double> cpu_each;       // child CPU seconds per execution
  double per_second() const { return executions / seconds; }
  double median_cpu() const {
    if (cpu_each.empty()) return 0;
    std::vector<double> v = cpu_each;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  }
};

void AddPhases(const egca::sandbox::ChildPhases& p, egca::sandbox::ChildPhases* sum) {
  sum->prepare += p.prepare;
  sum->fork += p.fork;
  sum->isolate += p.isolate;
  sum->main += p.main;
  sum->exit += p.exit;
  sum->collect += p.collect;
}

Row RunExecutor(const std::string& name, ExecutorPool* pool, const std::vector<Problem>& problems,
                TraceMode mode, int rounds, bool asserts_in_one_process = false) {
  std::vector<ProgramJob> jobs;
  for (const Problem& p : problems) {
    jobs.push_back({p.source, {TestCase::HumanEvalCheck(p.test, p.entry_point)}});
  }
  RunOptions options;
  options.limits.wall_seconds = 10;
  options.limits.cpu_seconds = 10;
  options.trace_mode = mode;
  options.trace.enabled = mode == TraceMode::kNative;
  options.assert_tests_in_one_process = asserts_in_one_process;
  Row row{name, pool->workers()};
  auto begin = Clock::now();
  for (int r = 0; r < rounds; ++r) {
    for (auto& result : pool->RunBatch(jobs, options)) {
      ++row.executions;
      if (result.ok() && result->all_passed()) ++row.passed;
      if (result.ok() && !result->tests.empty()) {
        row.child_seconds += result->tests[0].verdict.wall_seconds;
        row.child_cpu += result->tests[0].verdict.cpu_seconds;
        row.cpu_each.push_back(result->tests[0].verdict.cpu_seconds);
        row.minor_faults += static_cast<double>(result->tests[0].verdict.minor_faults);
        AddPhases(result->tests[0].verdict.phases, &row.phases);
      }
    }
  }
  row.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  return row;
}

// One fresh interpreter per execution, as HumanEval-style harnesses do.
bool RunFreshPython(const Problem& p, const std::string& dir, int slot) {
  const std::string file = fmt::format("{}/prog_{}.py", dir, slot);
  {
    std::ofstream out(file);
    out << p.source << "\n\n" << p.test << "\n\ncheck(" << p.entry_point << ")\n";
  }
  const char* argv[] = {"/usr/bin/python3.11", file.c_str(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return false;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The programs' own work: one /usr/bin/python3.11 compiles and runs every program + check
// in a fresh namespace, in-process (no start-up per program, no isolation, no fork), and
// reports the seconds spent. No executor can be faster per execution than this.
double InProcessWorkSeconds(const std::vector<Problem>& problems, int rounds) {
  char tmpl[] = "/tmp/egca-bench-work-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  nlohmann::json list = nlohmann::json::array();
  for (const Problem& p : problems) {
    list.push_back(
        {{"source", p.source}, {"test", p.test + "\n\ncheck(" + p.entry_point + ")\n"}});
  }
  std::ofstream(dir + "/problems.json") << list.dump();
  std::ofstream(dir + "/work.py")
      << "import json, sys, time\n"
         "problems = json.load(open(sys.argv[1]))\n"
         "best = None\n"
         "for _ in range(int(sys.argv[2])):\n"
         "    start = time.perf_counter()\n"
         "    for p in problems:\n"
         "        ns = {'__name__': '__candidate__'}\n"
         "        exec(compile(p['source'], '<candidate>', 'exec'), ns)\n"
         "        exec(compile(p['test'], '<test>', 'exec'), ns)\n"
         "    took = time.perf_counter() - start\n"
         "    best = took if best is None else min(best, took)\n"
         "print(best)\n";
  const std::string command = fmt::format("/usr/bin/python3.11 {0}/work.py {0}/problems.json {1}",
                                          dir, std::max(rounds, 1));
  double seconds = -1;
  if (FILE* out = popen(command.c_str(), "r")) {
    if (std::fscanf(out, "%lf", &seconds) != 1) seconds = -1;
    pclose(out);
  }
  std::string cleanup = "rm -rf " + dir;
  if (std::system(cleanup.c_str()) != 0) fmt::print(stderr, "could not remove {}\n", dir);
  return seconds;
}

Row RunBaseline(const std::vector<Problem>& problems, int workers, int rounds) {
  char tmpl[] = "/tmp/egca-bench-baseline-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  Row row{"fresh python3.11 per execution", workers};
  std::atomic<int> passed{0};
  auto begin = Clock::now();
  for (int r = 0; r < rounds; ++r) {
    std::atomic<size_t> next{0};
    auto work = [&](int slot) {
      for (size_t i = next++; i < problems.size(); i = next++) {
        if (RunFreshPython(problems[i], dir, slot)) ++passed;
      }
    };
    std::vector<std::thread> threads;
    for (int w = 1; w < workers; ++w) threads.emplace_back(work, w);
    work(0);
    for (auto& t : threads) t.join();
  }
  row.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  row.executions = static_cast<int>(problems.size()) * rounds;
  row.passed = passed;
  std::string cleanup = "rm -rf " + dir;
  if (std::system(cleanup.c_str()) != 0) fmt::print(stderr, "could not remove {}\n", dir);
  return row;
}

// CPU seconds of this process plus all its reaped descendants (fork servers are reaped
// when their pool is destroyed, and include the children they reaped).
double ProcessTreeCpuSeconds() {
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return seconds(self.ru_utime) + seconds(self.ru_stime) + seconds(children.ru_utime) +
         seconds(children.ru_stime);
}

// Mean per execution of each phase of a sandboxed run (wall ms), the child's CPU and its
// page faults: where the floor goes.
void PrintPhases(const Row& row) {
  const double n = row.executions > 0 ? row.executions : 1;
  const auto& p = row.phases;
  fmt::print(
      "  {}: prepare {:.3f} | fork {:.3f} | isolate {:.3f} | main {:.3f} | exit+reap {:.3f} | "
      "collect {:.3f} ms wall; child CPU {:.3f} ms; {:.0f} page faults\n",
      row.name, 1000 * p.prepare / n, 1000 * p.fork / n, 1000 * p.isolate / n, 1000 * p.main / n,
      1000 * p.exit / n, 1000 * p.collect / n, 1000 * row.child_cpu / n, row.minor_faults / n);
}

void PrintHeader() {
  fmt::print("| {:<40} | {:>7} | {:>10} | {:>6} | {:>8} | {:>9} | {:>15} | {:>7} |\n", "mode",
             "workers", "executions", "passed", "seconds", "exec/s", "child wall/cpu", "ratio");
  fmt::print("|{:-<42}|{:-<9}|{:-<12}|{:-<8}|{:-<10}|{:-<11}|{:-<17}|{:-<9}|\n", "", "", "", "", "",
             "", "", "");
}

void PrintRow(const Row& row, double baseline_per_second) {
  std::string child = row.child_seconds > 0 ? fmt::format("{:.1f}/{:.1f} ms",
                                                          1000 * row.child_seconds / row.executions,
                                                          1000 * row.child_cpu / row.executions)
                                            : std::string("-");
  fmt::print(
      "| {:<40} | {:>7} | {:>10} | {:>6} | {:>8.2f} | {:>9.1f} | {:>15} | {:>7} |\n", row.name,
      row.workers, row.executions, row.passed, row.seconds, row.per_second(), child,
      baseline_per_second > 0 ? fmt::format("{:.1f}x", row.per_second() / baseline_per_second)
                              : std::string("-"));
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  int baseline_rounds = 1;
  bool only_executor = false;
  std::string loop_program;  // --loop floor|humaneval SECONDS
  double loop_seconds = 0;
  int caller_heap_mb = 0;
  std::string data_dir = EGCA_DATA_DIR;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--executor-only") == 0) only_executor = true;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0)
      rounds = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--baseline-rounds") == 0)
      baseline_rounds = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--data") == 0)
      data_dir = argv[i + 1];
    else if (std::strcmp(argv[i], "--loop") == 0 && i + 2 < argc)
      loop_program = argv[i + 1], loop_seconds = std::atof(argv[i + 2]), ++i;
    else if (std::strcmp(argv[i], "--caller-heap-mb") == 0)
      caller_heap_mb = std::atoi(argv[i + 1]);
  }
  std::vector<Problem> problems = LoadHumanEval(data_dir);
  if (!loop_program.empty()) {
    // A caller holding a large heap (a trainer with its model) when it starts the pool.
    // A forked server (ServerStart::kFork) would copy the page tables of that heap at
    // every child's fork; the default exec'd server holds none of it.
    std::vector<char> caller_heap(static_cast<size_t>(caller_heap_mb) << 20, 1);
    const double cpu_before = ProcessTreeCpuSeconds();
    auto pool = ExecutorPool::Create({}, 1);
    if (!pool.ok()) return 2;
    std::vector<Problem> empty(problems.size(),
                               Problem{"empty", "pass\n", "def check(c):\n    pass\n", "print"});
    const bool real = loop_program == "humaneval";
    auto end = Clock::now() + std::chrono::duration<double>(loop_seconds);
    Row total(real ? "humaneval" : "floor", 1);
    while (Clock::now() < end) {
      Row r = RunExecutor(total.name, pool->get(), real ? problems : empty, TraceMode::kNone, 1);
      total.executions += r.executions;
      total.seconds += r.seconds;
      total.child_seconds += r.child_seconds;
      total.child_cpu += r.child_cpu;
      total.passed += r.passed;
      total.minor_faults += r.minor_faults;
      AddPhases(r.phases, &total.phases);
    }
    pool->reset();  // reaps the server: its CPU (and its children's) is counted below
    PrintHeader();
    PrintRow(total, 0);
    PrintPhases(total);
    fmt::print("  process tree CPU per execution (caller, server, children): {:.3f} ms\n",
               1000 * (ProcessTreeCpuSeconds() - cpu_before) / total.executions);
    return 0;
  }

  // Load-independent comparison, measured first (no other fork server alive, no thread
  // started yet): CPU time of the whole process tree per execution. The executor's
  // includes starting and stopping its fork server (interpreter warm-up).
  double cpu0 = ProcessTreeCpuSeconds();
  int cpu_executions = 0;
  {
    auto pool = ExecutorPool::Create({}, 1);
    if (!pool.ok()) return 2;
    cpu_executions = RunExecutor("cpu", pool->get(), problems, TraceMode::kNone, rounds).executions;
  }
  double executor_cpu_ms = 1000 * (ProcessTreeCpuSeconds() - cpu0) / cpu_executions;
  cpu0 = ProcessTreeCpuSeconds();
  Row base_cpu = RunBaseline(problems, 1, baseline_rounds);
  double baseline_cpu_ms = 1000 * (ProcessTreeCpuSeconds() - cpu0) / base_cpu.executions;

  // Fork servers first, before this process starts any thread.
  auto pool1 = ExecutorPool::Create({}, 1);
  egca::tracer::ExecutorOptions no_seccomp;
  no_seccomp.install_seccomp = false;
  auto pool_no_seccomp = ExecutorPool::Create(no_seccomp, 1);
  auto pool2 = ExecutorPool::Create({}, 2);
  for (auto* pool : {&pool1, &pool2, &pool_no_seccomp}) {
    if (!pool->ok()) {
      fmt::print(stderr, "cannot start the executor: {}\n", pool->status().ToString());
      return 2;
    }
  }
  // Warm-up pass (page cache, first forks).
  RunExecutor("warm-up", pool1->get(), problems, TraceMode::kNone, 1);

  // The floor: an empty program with an empty assert test (fork, isolation, harness).
  std::vector<Problem> empty(problems.size(),
                             Problem{"empty", "pass\n", "def check(c):\n    pass\n", "print"});
  Row floor = RunExecutor("egca executor, empty program (floor)", pool1->get(), empty,
                          TraceMode::kNone, rounds);
  // Assert tests in two processes (the default) against the program and its asserts in
  // one process (before issue 12's test process), alternating rounds so load changes hit
  // both alike.
  Row exec1("egca executor (warm fork, sandboxed)", 1);
  Row one_process("egca executor, asserts in one process", 1);
  for (int r = 0; r < rounds; ++r) {
    for (auto [row, one] : {std::pair<Row*, bool>{&exec1, false}, {&one_process, true}}) {
      Row part = RunExecutor(row->name, pool1->get(), problems, TraceMode::kNone, 1, one);
      row->executions += part.executions;
      row->passed += part.passed;
      row->seconds += part.seconds;
      row->child_seconds += part.child_seconds;
      row->child_cpu += part.child_cpu;
      row->minor_faults += part.minor_faults;
      AddPhases(part.phases, &row->phases);
      row->cpu_each.insert(row->cpu_each.end(), part.cpu_each.begin(), part.cpu_each.end());
    }
  }
  // Diagnostic: the same run without the seccomp filter (what the filter costs per run).
  Row unfiltered = RunExecutor("egca executor, seccomp off (diagnostic)", pool_no_seccomp->get(),
                               problems, TraceMode::kNone, rounds);
  Row exec2 = RunExecutor("egca executor (warm fork, sandboxed)", pool2->get(), problems,
                          TraceMode::kNone, rounds);
  if (only_executor) {
    PrintHeader();
    PrintRow(floor, 0);
    PrintRow(exec1, 0);
    PrintRow(one_process, 0);
    PrintRow(unfiltered, 0);
    PrintRow(exec2, 0);
    PrintPhases(floor);
    PrintPhases(exec1);
    fmt::print("asserts in two processes / one process, exec/s: {:.3f} (time per execution {:.2f}x)\n",
               exec1.per_second() / one_process.per_second(),
               one_process.per_second() / exec1.per_second());
    return 0;
  }
  Row native = RunExecutor("egca executor + native trace", pool1->get(), problems,
                           TraceMode::kNative, rounds);
  Row settrace = RunExecutor("egca executor + python settrace baseline", pool1->get(), problems,
                             TraceMode::kPythonSettrace, rounds);
  Row base1 = RunBaseline(problems, 1, baseline_rounds);
  Row base2 = RunBaseline(problems, 2, baseline_rounds);
  const double work_seconds = InProcessWorkSeconds(problems, rounds);

  fmt::print(
      "HumanEval canonical solutions + check(), {} problems; {} executor rounds, {} "
      "baseline rounds; {} hardware threads\n\n",
      problems.size(), rounds, baseline_rounds, std::thread::hardware_concurrency());
  PrintHeader();
  PrintRow(floor, base1.per_second());
  PrintRow(exec1, base1.per_second());
  PrintRow(one_process, base1.per_second());
  PrintRow(unfiltered, base1.per_second());
  PrintRow(exec2, base2.per_second());
  PrintRow(native, base1.per_second());
  PrintRow(settrace, base1.per_second());
  PrintRow(base1, 0);
  PrintRow(base2, 0);
  fmt::print("\nPhases per execution (means):\n");
  PrintPhases(floor);
  PrintPhases(exec1);
  PrintPhases(native);
  fmt::print("asserts in two processes / one process, exec/s: {:.3f} (time per execution {:.2f}x)\n",
             exec1.per_second() / one_process.per_second(),
             one_process.per_second() / exec1.per_second());
  fmt::print("Median child CPU per execution: untraced {:.3f} ms, native trace {:.3f} ms\n",
             1000 * exec1.median_cpu(), 1000 * native.median_cpu());
  fmt::print(
      "\nCPU per execution (process tree, 1 worker): executor {:.2f} ms, fresh python3.11 "
      "{:.2f} ms, ratio {:.1f}x\n",
      executor_cpu_ms, baseline_cpu_ms, baseline_cpu_ms / executor_cpu_ms);
  if (work_seconds > 0) {
    const double work_ms = 1000 * work_seconds / static_cast<double>(problems.size());
    // Against CPU, not wall time: under load the fresh-process baseline's wall time grows
    // with scheduling delays that the in-process measurement does not see.
    fmt::print(
        "The programs' own work (compile + run + check in one warm python3.11, best of {}): "
        "{:.2f} ms per execution. 10x the baseline's CPU per execution allows {:.2f} ms; an "
        "executor with no overhead at all would reach {:.1f}x.\n",
        rounds, work_ms, baseline_cpu_ms / 10, baseline_cpu_ms / work_ms);
  }
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) fmt::print("load average at the end: {:.2f}\n", load[0]);
  fmt::print(
      "\nratio = exec/s over the fresh-process baseline with the same number of workers; child "
      "wall/cpu = mean time from fork to reap and CPU of each sandboxed child\n");
  const bool ok = exec1.passed == exec1.executions && exec2.passed == exec2.executions &&
                  base1.passed == base1.executions;
  if (!ok) fmt::print("WARNING: not every execution passed its check\n");
  return ok ? 0 : 1;
}
