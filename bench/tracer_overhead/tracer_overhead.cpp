// Tracer overhead on real programs: QuixBugs correct programs under their asserts and
// HumanEval canonical solutions under check(). Per program, three modes run interleaved
// in one embedded interpreter, each many times:
//   untraced  - exec the program and its tests;
//   egca      - the same under _egca_trace (ConfigureTrace, start, run, stop, TakeTrace);
//   settrace  - the same under a pure-Python sys.settrace tracer that copies
//               dict(frame.f_locals) of "<candidate>" frames at every event (the textbook
//               tracer; a shallow copy: later in-place mutations show through it);
//   settrace_repr - the same tracer storing {name: repr(value)} at every event, i.e. a
//               snapshot that, like egca's, keeps the values as they were.
// Prints a table and the median / max of egca/untraced and the median / min of
// settrace/egca. Targets: median egca/untraced <= 5x, settrace/egca >= 10x.
#include <Python.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/tracer/trace.pb.h"
#include "egca/tracer/trace_options.h"
#include "trace_recorder.h"

namespace {

using egca::tracer::kUserFilename;
using Clock = std::chrono::steady_clock;

struct Program {
  std::string name;
  std::string source;  // the user's program, compiled as "<candidate>"
  std::string tests;   // compiled as "<tests>", run after the program in its namespace
};

struct Row {
  std::string name;
  double untraced = 0, egca = 0, settrace = 0, settrace_repr = 0;  // median s per run
  int events = 0;
  bool truncated = false;
};

constexpr const char kBaseline[] = R"PY(
import sys
snapshots = []
def _local(frame, event, arg):
    snapshots.append(dict(frame.f_locals))
    return _local
def _global(frame, event, arg):
    if frame.f_code.co_filename != '<candidate>':
        return None
    snapshots.append(dict(frame.f_locals))
    return _local
def _local_repr(frame, event, arg):
    snapshots.append({k: repr(v) for k, v in frame.f_locals.items()})
    return _local_repr
def _global_repr(frame, event, arg):
    if frame.f_code.co_filename != '<candidate>':
        return None
    snapshots.append({k: repr(v) for k, v in frame.f_locals.items()})
    return _local_repr
def install():
    snapshots.clear()
    sys.settrace(_global)
def install_repr():
    snapshots.clear()
    sys.settrace(_global_repr)
def uninstall():
    sys.settrace(None)
)PY";

class Bench {
 public:
  Bench() {
    PyObject* code = Py_CompileString(kBaseline, "<baseline>", Py_file_input);
    baseline_ = PyDict_New();
    PyDict_SetItemString(baseline_, "__builtins__", PyEval_GetBuiltins());
    PyObject* r = PyEval_EvalCode(code, baseline_, baseline_);
    Py_XDECREF(r);
    Py_XDECREF(code);
    trace_module_ = PyImport_ImportModule(egca::tracer::kTraceModuleName);
    options_.enabled = true;
    options_.max_events = 5'000'000;  // measure the real cost, not the cap
    options_.max_bytes = 1ull << 30;
  }

  enum class Mode { kUntraced, kEgca, kSettrace, kSettraceRepr };

  // One run; returns seconds, or < 0 if the program or its tests raised.
  double RunOnce(const Program& p, PyObject* program, PyObject* tests, Mode mode,
                 egca::tracer::proto::Trace* trace) {
    PyObject* globals = PyDict_New();
    PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
    PyObject* name = PyUnicode_FromString("__main__");
    PyDict_SetItemString(globals, "__name__", name);
    Py_DECREF(name);
    auto t0 = Clock::now();
    if (mode == Mode::kEgca) {
      egca::tracer::ConfigureTrace(options_, p.source);
      Call(trace_module_, "start", kUserFilename);
    } else if (mode == Mode::kSettrace) {
      CallBaseline("install");
    } else if (mode == Mode::kSettraceRepr) {
      CallBaseline("install_repr");
    }
    PyObject* r1 = PyEval_EvalCode(program, globals, globals);
    PyObject* r2 = r1 != nullptr ? PyEval_EvalCode(tests, globals, globals) : nullptr;
    bool ok = r2 != nullptr;
    if (!ok) PyErr_Clear();
    std::string serialized;
    if (mode == Mode::kEgca) {
      // What the sandboxed child does: stop, then ship the serialized trace.
      Call(trace_module_, "stop", nullptr);
      egca::tracer::TakeSerializedTrace(&serialized);
    } else if (mode == Mode::kSettrace || mode == Mode::kSettraceRepr) {
      CallBaseline("uninstall");
    }
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (mode == Mode::kEgca) trace->ParseFromString(serialized);
    Py_XDECREF(r1);
    Py_XDECREF(r2);
    PyDict_Clear(globals);
    Py_DECREF(globals);
    if (mode == Mode::kSettrace || mode == Mode::kSettraceRepr) {
      PyObject* snaps = PyDict_GetItemString(baseline_, "snapshots");
      if (snaps != nullptr) PyList_SetSlice(snaps, 0, PyList_GET_SIZE(snaps), nullptr);
    }
    return ok ? seconds : -1;
  }

  // Returns false if the program fails untraced (skipped).
  bool Measure(const Program& p, double min_seconds, int max_reps, Row* row) {
    PyObject* program = Py_CompileString(p.source.c_str(), kUserFilename, Py_file_input);
    PyObject* tests = Py_CompileString(p.tests.c_str(), "<tests>", Py_file_input);
    if (program == nullptr || tests == nullptr) {
      PyErr_Clear();
      Py_XDECREF(program);
      Py_XDECREF(tests);
      return false;
    }
    egca::tracer::proto::Trace trace;
    double first = RunOnce(p, program, tests, Mode::kUntraced, &trace);
    bool ok = first >= 0;
    std::vector<double> untraced, egca, settrace, settrace_repr;
    if (ok) {
      int reps = std::clamp(static_cast<int>(min_seconds / std::max(first, 1e-6)), 5, max_reps);
      // Long-running programs (big tables rehashed/repr'd at every event) would take
      // minutes per traced run: fewer repetitions, and no repr baseline (its cost is the
      // repr of every local at every line, unbounded).
      bool slow = first > slow_seconds_;
      if (slow) reps = 3;
      for (int i = 0; i < reps && ok; ++i) {
        double u = RunOnce(p, program, tests, Mode::kUntraced, &trace);
        double e = RunOnce(p, program, tests, Mode::kEgca, &trace);
        double s = RunOnce(p, program, tests, Mode::kSettrace, &trace);
        double r = slow ? 0.0 : RunOnce(p, program, tests, Mode::kSettraceRepr, &trace);
        ok = u >= 0 && e >= 0 && s >= 0 && r >= 0;
        untraced.push_back(u);
        egca.push_back(e);
        settrace.push_back(s);
        settrace_repr.push_back(r);
      }
    }
    Py_DECREF(program);
    Py_DECREF(tests);
    if (!ok) return false;
    row->name = p.name;
    row->untraced = Median(untraced);
    row->egca = Median(egca);
    row->settrace = Median(settrace);
    row->settrace_repr = Median(settrace_repr);
    row->events = trace.events_size();
    row->truncated = trace.truncated();
    return true;
  }

  static double Median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }

 private:
  static void Call(PyObject* module, const char* fn, const char* arg) {
    PyObject* r = arg ? PyObject_CallMethod(module, fn, "s", arg)
                      : PyObject_CallMethod(module, fn, nullptr);
    if (r == nullptr) PyErr_Print();
    Py_XDECREF(r);
  }
  void CallBaseline(const char* fn) {
    PyObject* f = PyDict_GetItemString(baseline_, fn);
    PyObject* r = PyObject_CallNoArgs(f);
    if (r == nullptr) PyErr_Print();
    Py_XDECREF(r);
  }

  double slow_seconds_ = 0.002;

 public:
  void set_slow_seconds(double s) { slow_seconds_ = s; }
  egca::tracer::TraceOptions& options() { return options_; }

 private:
  PyObject* baseline_ = nullptr;
  PyObject* trace_module_ = nullptr;
  egca::tracer::TraceOptions options_;
};

std::vector<Program> LoadQuixBugs(const std::string& path) {
  std::vector<Program> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      std::fprintf(stderr, "%s: skipping unparsable line\n", path.c_str());
      continue;
    }
    out.push_back({"quixbugs/" + j.value("name", "?"), j.value("solution", ""),
                   j.value("tests", "")});
  }
  return out;
}

std::vector<Program> LoadHumanEval(const std::string& path) {
  std::vector<Program> out;
  auto text = egca::ReadMaybeGzipFile(path);
  if (!text.ok()) {
    std::fprintf(stderr, "%s\n", text.status().ToString().c_str());
    return out;
  }
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    std::string entry = j.value("entry_point", "");
    out.push_back({j.value("task_id", "?"),
                   j.value("prompt", "") + j.value("canonical_solution", ""),
                   j.value("test", "") + "\ncheck(" + entry + ")\n"});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"egca tracer overhead: traced / untraced wall time on real programs"};
  std::string data_dir = EGCA_DATA_DIR;
  double min_seconds = 0.05;
  int max_reps = 200;
  int limit = 0;
  std::string json_out;
  std::vector<std::string> files;
  app.add_option("--data", data_dir, "data directory (../shared/data)");
  app.add_option("--min-seconds", min_seconds, "untraced time to accumulate per program");
  app.add_option("--max-reps", max_reps, "max repetitions per program and mode");
  app.add_option("--limit", limit, "only the first N programs of each set (0 = all)");
  app.add_option("--json", json_out, "also write the rows as JSON here");
  app.add_option("--file", files, "extra programs (.py, self-testing) to measure; with "
                                  "--only-files, just these");
  bool only_files = false;
  double slow_seconds = 0.002;
  bool no_variables = false, no_lines = false;
  int hash_budget = 0;
  app.add_flag("--no-variables", no_variables, "egca without variable snapshots");
  app.add_flag("--no-lines", no_lines, "egca without LINE events");
  app.add_option("--hash-budget", hash_budget, "TraceOptions::hash_budget for egca");
  app.add_option("--slow-seconds", slow_seconds,
                 "untraced run time above which a program gets 3 repetitions and no repr "
                 "baseline");
  bool profile_egca = false;
  app.add_flag("--profile-egca", profile_egca,
               "run only the egca mode, repeatedly (for perf); prints no ratios");
  app.add_flag("--only-files", only_files, "measure only --file programs");
  CLI11_PARSE(app, argc, argv);

  PyImport_AppendInittab(egca::tracer::kTraceModuleName, &PyInit__egca_trace);
  Py_InitializeEx(0);
  // Programs print; keep the table readable.
  PyRun_SimpleString("import sys, io\nsys.stdout = io.StringIO()\n");

  std::vector<Program> programs = LoadQuixBugs(data_dir + "/quixbugs/quixbugs_python.jsonl");
  std::vector<Program> humaneval = LoadHumanEval(data_dir + "/humaneval/HumanEval.jsonl.gz");
  if (limit > 0) {
    if (programs.size() > static_cast<size_t>(limit)) programs.resize(limit);
    if (humaneval.size() > static_cast<size_t>(limit)) humaneval.resize(limit);
  }
  programs.insert(programs.end(), humaneval.begin(), humaneval.end());
  if (only_files) programs.clear();
  for (const std::string& f : files) {
    auto text = egca::ReadFile(f);
    if (!text.ok()) {
      std::fprintf(stderr, "%s\n", text.status().ToString().c_str());
      return 2;
    }
    programs.push_back({f, *text, ""});
  }
  if (programs.empty()) {
    std::fprintf(stderr, "no programs found under %s\n", data_dir.c_str());
    return 2;
  }

  Bench bench;
  bench.set_slow_seconds(slow_seconds);
  if (no_variables) bench.options().record_variables = false;
  if (no_lines) bench.options().record_lines = false;
  if (hash_budget > 0) bench.options().hash_budget = static_cast<uint32_t>(hash_budget);
  if (profile_egca) {
    for (const Program& p : programs) {
      PyObject* program = Py_CompileString(p.source.c_str(), kUserFilename, Py_file_input);
      PyObject* tests = Py_CompileString(p.tests.c_str(), "<tests>", Py_file_input);
      egca::tracer::proto::Trace trace;
      double total = 0;
      for (int i = 0; i < max_reps; ++i) {
        total += bench.RunOnce(p, program, tests, Bench::Mode::kEgca, &trace);
      }
      std::printf("%s: %.1f us per run, %d events\n", p.name.c_str(), total / max_reps * 1e6,
                  trace.events_size());
      Py_XDECREF(program);
      Py_XDECREF(tests);
    }
    return 0;
  }
  std::vector<Row> rows;
  int skipped = 0;
  std::printf("%-34s %10s %10s %10s %10s %8s %8s %8s %7s\n", "program", "untraced_us",
              "egca_us", "settr_us", "repr_us", "egca/unt", "set/egca", "repr/egca", "events");
  for (const Program& p : programs) {
    Row row;
    if (!bench.Measure(p, min_seconds, max_reps, &row)) {
      ++skipped;
      std::printf("%-36s skipped (fails untraced or under a tracer)\n", p.name.c_str());
      continue;
    }
    std::printf("%-34s %10.1f %10.1f %10.1f %10.1f %8.2f %8.2f %8.2f %7d%s\n",
                row.name.c_str(), row.untraced * 1e6, row.egca * 1e6, row.settrace * 1e6,
                row.settrace_repr * 1e6, row.egca / row.untraced, row.settrace / row.egca,
                row.settrace_repr > 0 ? row.settrace_repr / row.egca : 0.0, row.events, row.truncated ? " TRUNCATED" : "");
    std::fflush(stdout);
    rows.push_back(row);
  }

  std::vector<double> overhead, speedup;
  for (const Row& r : rows) {
    overhead.push_back(r.egca / r.untraced);
    speedup.push_back(r.settrace / r.egca);
  }
  double total_u = 0, total_e = 0, total_s = 0;
  for (const Row& r : rows) {
    total_u += r.untraced;
    total_e += r.egca;
    total_s += r.settrace;
  }
  std::printf("\nprograms measured: %zu, skipped: %d\n", rows.size(), skipped);
  std::printf("egca/untraced:   median %.2fx  max %.2fx  (aggregate %.2fx)  target: median <= 5x\n",
              Bench::Median(overhead), *std::max_element(overhead.begin(), overhead.end()),
              total_e / total_u);
  std::printf("settrace/egca:   median %.2fx  min %.2fx  (aggregate %.2fx)  target: >= 10x\n",
              Bench::Median(speedup), *std::min_element(speedup.begin(), speedup.end()),
              total_s / total_e);
  std::vector<double> repr_speedup, settrace_overhead;
  for (const Row& r : rows) {
    if (r.settrace_repr > 0) repr_speedup.push_back(r.settrace_repr / r.egca);
    settrace_overhead.push_back(r.settrace / r.untraced);
  }
  if (!repr_speedup.empty()) {
    std::printf("settrace_repr/egca: median %.2fx  min %.2fx  (%zu programs; 0 in the table = "
                "not run)\n",
                Bench::Median(repr_speedup),
                *std::min_element(repr_speedup.begin(), repr_speedup.end()), repr_speedup.size());
  }
  std::printf("settrace/untraced: median %.2fx\n", Bench::Median(settrace_overhead));
  if (!json_out.empty()) {
    nlohmann::json j = nlohmann::json::array();
    for (const Row& r : rows) {
      j.push_back({{"program", r.name}, {"untraced_s", r.untraced}, {"egca_s", r.egca},
                   {"settrace_s", r.settrace}, {"settrace_repr_s", r.settrace_repr},
                   {"events", r.events},
                   {"truncated", r.truncated}});
    }
    std::ofstream(json_out) << j.dump(1) << "\n";
  }
  return 0;
}
