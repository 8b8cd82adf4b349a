// Tracer overhead on real programs: QuixBugs correct programs under their asserts and
// HumanEval canonical solutions under check(). Per program, five modes run interleaved in
// one embedded interpreter, each many times:
//   untraced      - exec the program and its tests;
//   egca          - the same under _egca_trace (ConfigureTrace, start, run, stop, serialize
//                   the trace: what the sandboxed child does);
//   settrace_deep - a pure-Python sys.settrace tracer that, at every event of a
//                   "<candidate>" frame, stores {name: copy.deepcopy(value)} of the locals
//                   egca records (plus a deep copy of the return value): the same snapshots
//                   as egca's (values as they were at the event). The issue's baseline.
//   settrace      - the same tracer storing dict(frame.f_locals): a shallow copy, NOT the
//                   same snapshots (in-place mutation after the event shows through it);
//   settrace_repr - the same tracer storing {name: repr(value)} (not canonical).
// Before timing, each program is traced once by egca and once by settrace_deep with the
// snapshots kept, and the two are compared event by event: same kinds and lines, and for
// every event the frame's full variable state reconstructed from egca's deltas has the
// same canonical hashes as the deep-copied snapshot (hashed after the run, so a copy that
// was not a true snapshot would show a later state). The table's `same` column says so.
// Prints the median / max of egca/untraced and the median / min of every baseline over
// egca. Targets (issue 2): median egca/untraced <= 5x; settrace_deep/egca >= 10x.
#include <Python.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
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
#include "value_encoder.h"
#include "../common/stats.h"

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
  // Median seconds per run; 0 = not run (slow programs skip the deep and repr tracers).
  double untraced = 0, egca = 0, settrace_deep = 0, settrace = 0, settrace_repr = 0;
  int events = 0;
  bool truncated = false;
  std::string same;  // "yes", "NO: <first difference>", or "-" (not compared)
};

// The pure-Python tracers. All three see the same events as egca (sys.settrace's 'call'
// for every frame, then 'line'/'return'/'exception' for "<candidate>" frames) and append one
// snapshot per event:
//   _deep:  {name: copy.deepcopy(value)} over the same names egca records (no ".0", no
//           namespace bookkeeping such as __builtins__), one deepcopy memo per snapshot,
//           plus a deep copy of the return value. A snapshot holds the values as they were
//           at the event, like egca's; values deepcopy cannot copy (modules, generators,
//           dict views, ...) are kept by reference (egca records those by type/name).
//   _local: dict(frame.f_locals), a shallow copy (later in-place mutation shows through).
//   _repr:  {name: repr(value)} (not canonical: set order, addresses, user __repr__).
constexpr const char kBaseline[] = R"PY(
import sys, copy
snapshots = []
_deepcopy = copy.deepcopy
_BOOKKEEPING = frozenset(('__name__', '__builtins__', '__doc__', '__loader__', '__spec__',
    '__package__', '__file__', '__cached__', '__module__', '__qualname__',
    '__annotations__', '__classcell__'))
_CO_OPTIMIZED = 1
def _deep_snapshot(frame, event, arg):
    namespace = not (frame.f_code.co_flags & _CO_OPTIMIZED)
    memo = {}
    snap = {}
    for k, v in frame.f_locals.items():
        if k[:1] == '.' or (namespace and k in _BOOKKEEPING):
            continue
        try:
            snap[k] = _deepcopy(v, memo)
        except Exception:
            snap[k] = v
    ret = None
    if event == 'return' and arg is not None:
        try:
            ret = _deepcopy(arg, memo)
        except Exception:
            ret = arg
    snapshots.append((event, frame.f_lineno, snap, ret))
def _local_deep(frame, event, arg):
    _deep_snapshot(frame, event, arg)
    return _local_deep
def _global_deep(frame, event, arg):
    if frame.f_code.co_filename != '<candidate>':
        return None
    _deep_snapshot(frame, event, arg)
    return _local_deep
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
def install_deep():
    snapshots.clear()
    sys.settrace(_global_deep)
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
    random_ = PyImport_ImportModule("random");
    options_.enabled = true;
    options_.max_events = 5'000'000;  // measure the real cost, not the cap
    options_.max_bytes = 1ull << 30;
  }

  enum class Mode { kUntraced, kEgca, kSettraceDeep, kSettrace, kSettraceRepr };

  // One run; returns seconds, or < 0 if the program or its tests raised. With
  // `keep_snapshots` the Python tracers' snapshots stay in baseline_["snapshots"] until the
  // next run.
  double RunOnce(const Program& p, PyObject* program, PyObject* tests, Mode mode,
                 egca::tracer::proto::Trace* trace, bool keep_snapshots = false) {
    PyObject* globals = PyDict_New();
    PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
    PyObject* name = PyUnicode_FromString("__main__");
    PyDict_SetItemString(globals, "__name__", name);
    Py_DECREF(name);
    bool python_tracer = mode == Mode::kSettraceDeep || mode == Mode::kSettrace ||
                         mode == Mode::kSettraceRepr;
    // Some HumanEval checks draw random inputs: every mode runs the same ones.
    PyObject* seeded = PyObject_CallMethod(random_, "seed", "i", 20261122);
    if (seeded == nullptr) PyErr_Clear();
    Py_XDECREF(seeded);
    auto t0 = Clock::now();
    if (mode == Mode::kEgca) {
      egca::tracer::ConfigureTrace(options_, p.source);
      Call(trace_module_, "start", kUserFilename);
    } else if (mode == Mode::kSettraceDeep) {
      CallBaseline("install_deep");
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
    } else if (python_tracer) {
      CallBaseline("uninstall");
    }
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (mode == Mode::kEgca) trace->ParseFromString(serialized);
    Py_XDECREF(r1);
    Py_XDECREF(r2);
    if (python_tracer && !keep_snapshots) ClearSnapshots();
    PyDict_Clear(globals);
    Py_DECREF(globals);
    return ok ? seconds : -1;
  }

  // Compares egca's trace of the program with settrace_deep's snapshots (see the file
  // comment). Returns "yes" or "NO: <first difference>".
  std::string CompareWithDeepCopy(const Program& p, PyObject* program, PyObject* tests) {
    egca::tracer::proto::Trace trace;
    if (RunOnce(p, program, tests, Mode::kEgca, &trace) < 0) return "NO: egca run failed";
    if (trace.truncated()) return "NO: egca trace truncated";
    if (RunOnce(p, program, tests, Mode::kSettraceDeep, &trace, true) < 0) {
      ClearSnapshots();
      return "NO: settrace_deep run failed";
    }
    std::string verdict = CompareSnapshots(trace);
    ClearSnapshots();
    return verdict;
  }

  // Returns false if the program fails untraced (skipped).
  bool Measure(const Program& p, double min_seconds, int max_reps, bool compare, Row* row) {
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
    std::vector<double> untraced, egca, deep, settrace, settrace_repr;
    // Long-running programs (big tables copied/repr'd at every event) would take minutes
    // per Python-traced run: 3 repetitions, the shallow tracer once, and no deep-copy or
    // repr tracer (their cost is a copy / repr of every local at every event, unbounded).
    bool slow = ok && first > slow_seconds_;
    row->same = "-";
    if (ok && compare && !slow) row->same = CompareWithDeepCopy(p, program, tests);
    if (ok) {
      int reps = std::clamp(static_cast<int>(min_seconds / std::max(first, 1e-6)), 5, max_reps);
      if (slow) reps = 3;
      for (int i = 0; i < reps && ok; ++i) {
        double u = RunOnce(p, program, tests, Mode::kUntraced, &trace);
        double e = RunOnce(p, program, tests, Mode::kEgca, &trace);
        bool deep_and_repr = !slow && !no_baselines_;
        double d = deep_and_repr ? RunOnce(p, program, tests, Mode::kSettraceDeep, &trace) : 0.0;
        // Slow programs: the shallow settrace tracer once (QuixBugs levenshtein: 70 s a run).
        bool shallow = !no_baselines_ && !(slow && i > 0);
        double s = shallow ? RunOnce(p, program, tests, Mode::kSettrace, &trace) : 0.0;
        double r = deep_and_repr ? RunOnce(p, program, tests, Mode::kSettraceRepr, &trace) : 0.0;
        ok = u >= 0 && e >= 0 && d >= 0 && s >= 0 && r >= 0;
        untraced.push_back(u);
        egca.push_back(e);
        if (deep_and_repr || i == 0) deep.push_back(d);
        if (shallow || i == 0) settrace.push_back(s);
        if (deep_and_repr || i == 0) settrace_repr.push_back(r);
      }
    }
    Py_DECREF(program);
    Py_DECREF(tests);
    if (!ok) return false;
    row->name = p.name;
    row->untraced = egca::bench::Median(untraced);
    row->egca = egca::bench::Median(egca);
    row->settrace_deep = egca::bench::Median(deep);
    row->settrace = egca::bench::Median(settrace);
    row->settrace_repr = egca::bench::Median(settrace_repr);
    row->events = trace.events_size();
    row->truncated = trace.truncated();
    return true;
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

  void ClearSnapshots() {
    PyObject* snaps = PyDict_GetItemString(baseline_, "snapshots");
    if (snaps != nullptr) PyList_SetSlice(snaps, 0, PyList_GET_SIZE(snaps), nullptr);
  }

  static const char* KindName(egca::tracer::proto::EventKind kind) {
    switch (kind) {
      case egca::tracer::proto::CALL: return "call";
      case egca::tracer::proto::LINE: return "line";
      case egca::tracer::proto::RETURN: return "return";
      case egca::tracer::proto::EXCEPTION: return "exception";
      default: return "?";
    }
  }

  // Event by event: kind, line, and the frame's full state (egca: the deltas `changed` /
  // `deleted` accumulated per frame; baseline: the deep-copied snapshot, hashed now with
  // egca's encoder under the same options) must agree, and so must return values.
  std::string CompareSnapshots(const egca::tracer::proto::Trace& trace) {
    PyObject* snaps = PyDict_GetItemString(baseline_, "snapshots");
    if (snaps == nullptr || !PyList_Check(snaps)) return "NO: no snapshots";
    if (PyList_GET_SIZE(snaps) != trace.events_size()) {
      return fmt::format("NO: {} egca events, {} settrace events", trace.events_size(),
                         PyList_GET_SIZE(snaps));
    }
    egca::tracer::hook::ValueEncoder encoder(options_);
    std::map<uint32_t, std::map<std::string, egca::tracer::proto::Value>> state;  // per frame
    for (int i = 0; i < trace.events_size(); ++i) {
      const egca::tracer::proto::Event& e = trace.events(i);
      PyObject* snap = PyList_GET_ITEM(snaps, i);
      PyObject* event = PyTuple_GET_ITEM(snap, 0);
      long line = PyLong_AsLong(PyTuple_GET_ITEM(snap, 1));
      if (PyErr_Occurred()) {
        PyErr_Clear();
        line = 0;
      }
      PyObject* values = PyTuple_GET_ITEM(snap, 2);
      PyObject* ret = PyTuple_GET_ITEM(snap, 3);
      if (PyUnicode_CompareWithASCIIString(event, KindName(e.kind())) != 0) {
        return fmt::format("NO: event {}: egca {}, settrace {}", i, KindName(e.kind()),
                           PyUnicode_AsUTF8(event));
      }
      // A module body's first event sits on line 0 for Python; egca reports its first line.
      if (line > 0 && static_cast<uint32_t>(line) != e.line()) {
        return fmt::format("NO: event {}: egca line {}, settrace line {}", i, e.line(), line);
      }
      auto& vars = state[e.frame()];
      for (const auto& v : e.changed()) vars[v.name()] = v.value();
      for (const auto& d : e.deleted()) vars.erase(d);
      std::map<std::string, uint64_t> copied;
      encoder.BeginSnapshot();
      Py_ssize_t pos = 0;
      PyObject *key, *value;
      while (PyDict_Next(values, &pos, &key, &value)) {
        copied[PyUnicode_AsUTF8(key)] = encoder.Hash(value).hash;
      }
      encoder.EndSnapshot();
      for (const auto& [name, v] : vars) {
        auto it = copied.find(name);
        if (it == copied.end()) {
          return fmt::format("NO: event {} (line {}): {} only in egca's state", i, e.line(), name);
        }
        if (it->second != v.hash()) {
          PyObject* copy = PyDict_GetItemString(values, name.c_str());
          return fmt::format("NO: event {} (line {}): {} = {} in egca's state, {} in the copy",
                             i, e.line(), name, v.text(), encoder.Render(copy));
        }
      }
      if (copied.size() != vars.size()) {
        return fmt::format("NO: event {} (line {}): {} variables in the copy, {} in egca's state",
                           i, e.line(), copied.size(), vars.size());
      }
      if (e.has_return_value() && ret != Py_None &&
          encoder.Hash(ret).hash != e.return_value().hash()) {
        return fmt::format("NO: event {} (line {}): return value {} vs {}", i, e.line(),
                           e.return_value().text(), encoder.Render(ret));
      }
    }
    return "yes";
  }

  double slow_seconds_ = 0.002;
  bool no_baselines_ = false;

 public:
  void set_slow_seconds(double s) { slow_seconds_ = s; }
  void set_no_baselines(bool b) { no_baselines_ = b; }
  egca::tracer::TraceOptions& options() { return options_; }

 private:
  PyObject* baseline_ = nullptr;
  PyObject* trace_module_ = nullptr;
  PyObject* random_ = nullptr;
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
  std::string match;
  app.add_option("--match", match, "only programs whose name contains this");
  app.add_option("--json", json_out, "also write the rows as JSON here");
  app.add_option("--file", files, "extra programs (.py, self-testing) to measure; with "
                                  "--only-files, just these");
  bool only_files = false;
  double slow_seconds = 0.002;
  bool no_variables = false, no_lines = false;
  int hash_budget = 0;
  app.add_flag("--no-variables", no_variables, "egca without variable snapshots");
  app.add_flag("--no-lines", no_lines, "egca without LINE events");
  bool no_frame_filter = false;
  app.add_flag("--no-frame-filter", no_frame_filter,
               "egca with every frame in tracing mode (TraceOptions::frame_filter off)");
  app.add_option("--hash-budget", hash_budget, "TraceOptions::hash_budget for egca");
  app.add_option("--slow-seconds", slow_seconds,
                 "untraced run time above which a program gets 3 repetitions and no "
                 "deep-copy / repr tracer");
  bool profile_egca = false;
  app.add_flag("--profile-egca", profile_egca,
               "run only the egca mode, repeatedly (for perf); prints no ratios");
  app.add_flag("--only-files", only_files, "measure only --file programs");
  bool no_baselines = false;
  app.add_flag("--no-baselines", no_baselines,
               "only untraced and egca (no Python tracers, no comparison): for ablations");
  bool no_compare = false;
  app.add_flag("--no-compare", no_compare,
               "skip the egca vs settrace_deep snapshot comparison");
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
  if (!match.empty()) {
    programs.erase(std::remove_if(programs.begin(), programs.end(),
                                  [&](const Program& p) {
                                    return p.name.find(match) == std::string::npos;
                                  }),
                   programs.end());
  }
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
  bench.set_no_baselines(no_baselines);
  if (no_baselines) no_compare = true;
  if (no_variables) bench.options().record_variables = false;
  if (no_lines) bench.options().record_lines = false;
  if (no_frame_filter) bench.options().frame_filter = false;
  if (hash_budget > 0) bench.options().hash_budget = static_cast<uint32_t>(hash_budget);
  if (profile_egca) {
    for (const Program& p : programs) {
      PyObject* program = Py_CompileString(p.source.c_str(), kUserFilename, Py_file_input);
      PyObject* tests = Py_CompileString(p.tests.c_str(), "<tests>", Py_file_input);
      egca::tracer::proto::Trace trace;
      // Programs slower than --slow-seconds untraced would dominate the profile.
      if (bench.RunOnce(p, program, tests, Bench::Mode::kUntraced, &trace) > slow_seconds) {
        Py_XDECREF(program);
        Py_XDECREF(tests);
        continue;
      }
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
  double load_start[3] = {0, 0, 0};
  getloadavg(load_start, 3);
  std::vector<Row> rows;
  int skipped = 0;
  std::printf("%-28s %9s %9s %9s %9s %9s %8s %8s %8s %8s %7s %s\n", "program", "untr_us",
              "egca_us", "deep_us", "dict_us", "repr_us", "egca/unt", "deep/egc",
              "dict/egc", "repr/egc", "events", "same");
  for (const Program& p : programs) {
    Row row;
    if (!bench.Measure(p, min_seconds, max_reps, !no_compare, &row)) {
      ++skipped;
      std::printf("%-30s skipped (fails untraced or under a tracer)\n", p.name.c_str());
      continue;
    }
    auto ratio = [&](double x) { return x > 0 ? x / row.egca : 0.0; };
    std::printf("%-28s %9.1f %9.1f %9.1f %9.1f %9.1f %8.2f %8.2f %8.2f %8.2f %7d %s%s\n",
                row.name.c_str(), row.untraced * 1e6, row.egca * 1e6, row.settrace_deep * 1e6,
                row.settrace * 1e6, row.settrace_repr * 1e6, row.egca / row.untraced,
                ratio(row.settrace_deep), ratio(row.settrace), ratio(row.settrace_repr),
                row.events, row.same.c_str(), row.truncated ? " TRUNCATED" : "");
    std::fflush(stdout);
    rows.push_back(row);
  }
  if (rows.empty()) return 1;

  // Per set (QuixBugs, HumanEval, extra files) and overall.
  auto set_of = [](const Row& r) -> std::string {
    if (r.name.rfind("quixbugs/", 0) == 0) return "QuixBugs";
    if (r.name.rfind("HumanEval/", 0) == 0) return "HumanEval";
    return "files";
  };
  std::vector<std::string> sets;
  for (const Row& r : rows) {
    if (std::find(sets.begin(), sets.end(), set_of(r)) == sets.end()) sets.push_back(set_of(r));
  }
  if (sets.size() > 1) sets.push_back("all");
  double load_end[3] = {0, 0, 0};
  getloadavg(load_end, 3);
  std::printf("\nprograms measured: %zu, skipped: %d; load average (1 min) %.2f at the start, "
              "%.2f at the end\n", rows.size(), skipped, load_start[0], load_end[0]);
  for (const std::string& set : sets) {
    std::vector<double> overhead, deep, shallow, repr;
    double total_u = 0, total_e = 0;
    int compared = 0, same = 0;
    std::string worst;
    double worst_ratio = 0;
    for (const Row& r : rows) {
      if (set != "all" && set_of(r) != set) continue;
      overhead.push_back(r.egca / r.untraced);
      if (r.egca / r.untraced > worst_ratio) {
        worst_ratio = r.egca / r.untraced;
        worst = r.name;
      }
      if (r.settrace_deep > 0) deep.push_back(r.settrace_deep / r.egca);
      if (r.settrace > 0) shallow.push_back(r.settrace / r.egca);
      if (r.settrace_repr > 0) repr.push_back(r.settrace_repr / r.egca);
      total_u += r.untraced;
      total_e += r.egca;
      if (r.same != "-") ++compared;
      if (r.same == "yes") ++same;
    }
    auto min_of = [](const std::vector<double>& v) {
      return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
    };
    auto med = [](const std::vector<double>& v) { return egca::bench::Median(v); };
    std::printf("[%s] %zu programs\n", set.c_str(), overhead.size());
    std::printf("  egca/untraced:      median %6.2fx  max %7.2fx (%s)  aggregate %.2fx  "
                "target: median <= 5x\n",
                med(overhead), worst_ratio, worst.c_str(), total_e / total_u);
    std::printf("  settrace_deep/egca: median %6.2fx  min %6.2fx  (%zu programs)  "
                "target: >= 10x\n", med(deep), min_of(deep), deep.size());
    std::printf("  settrace/egca:      median %6.2fx  min %6.2fx  (dict(f_locals), shallow)\n",
                med(shallow), min_of(shallow));
    std::printf("  settrace_repr/egca: median %6.2fx  min %6.2fx  (%zu programs)\n", med(repr),
                min_of(repr), repr.size());
    std::printf("  same snapshots as settrace_deep: %d of %d compared\n", same, compared);
  }
  if (!json_out.empty()) {
    nlohmann::json j = nlohmann::json::array();
    for (const Row& r : rows) {
      j.push_back({{"program", r.name}, {"untraced_s", r.untraced}, {"egca_s", r.egca},
                   {"settrace_deep_s", r.settrace_deep}, {"settrace_s", r.settrace},
                   {"settrace_repr_s", r.settrace_repr}, {"events", r.events},
                   {"truncated", r.truncated}, {"same_snapshots", r.same}});
    }
    std::ofstream(json_out) << j.dump(1) << "\n";
  }
  return 0;
}
