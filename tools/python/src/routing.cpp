// Routing from Python: Router (one problem, one warm executor), route_batch (the egca-batch
// runner itself: same reference resolution, same records, N workers), trace (egca-trace
// --json), and the Route object. The GIL is released while programs run.
#include <fmt/format.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "data.h"
#include "egca/batch/runner.h"
#include "egca/batch/store.h"
#include "egca/diff/divergence.h"
#include "egca/tools/trace_view.h"
#include "egca/tracer/test_args.h"
#include "routing.h"

namespace egca::python {
namespace {

// The options egca-batch run / egca-trace take that change routes.
struct RouteSettings {
  double timeout = 5;  // seconds per test (wall and CPU), egca-batch's default
  bool runtime_error_is_logic = false;
  bool check_comparability = true;
  bool passing_bypasses_gates = false;
  uint64_t seed = 0;                 // random-boundary target
  std::string constraints = "none";  // "none" or "extract"

  void Check() const {
    if (!(timeout > 0)) Raise(PyExc_ValueError, "timeout must be > 0 seconds");
    if (constraints != "none" && constraints != "extract") {
      Raise(PyExc_ValueError,
            "constraints: expected \"none\" or \"extract\", got \"" + constraints + "\"");
    }
  }
  gates::RouterOptions Router() const {
    gates::RouterOptions o;
    o.run.limits.wall_seconds = timeout;
    o.run.limits.cpu_seconds = timeout;
    o.runtime_error_is_logic = runtime_error_is_logic;
    o.check_comparability = check_comparability;
    o.passing_bypasses_gates = passing_bypasses_gates;
    o.divergence.random_seed = seed;
    return o;
  }
};

#define EGCA_ROUTE_SETTINGS_ARGS                                                                   \
  py::kw_only(), py::arg("timeout") = 5.0, py::arg("runtime_error_is_logic") = false,              \
                 py::arg("check_comparability") = true, py::arg("passing_bypasses_gates") = false, \
                 py::arg("seed") = 0, py::arg("constraints") = "none"

RouteSettings MakeSettings(double timeout, bool runtime_error_is_logic, bool check_comparability,
                           bool passing_bypasses_gates, uint64_t seed,
                           const std::string& constraints) {
  RouteSettings s{
      timeout,    runtime_error_is_logic, check_comparability, passing_bypasses_gates, seed,
      constraints};
  s.Check();
  return s;
}

py::object SpanDict(const std::optional<SourceSpan>& s) {
  if (!s) return py::none();
  py::dict d;
  d["begin_byte"] = s->begin_byte;
  d["end_byte"] = s->end_byte;
  d["start_line"] = s->begin.line;
  d["start_col"] = s->begin.column;
  d["end_line"] = s->end.line;
  d["end_col"] = s->end.column;
  return std::move(d);
}

py::object LocatedDict(const std::optional<batch::LocatedSpan>& s) {
  if (!s) return py::none();
  py::dict d;
  d["program"] = SpanDict(s->program);
  d["completion"] = s->in_completion ? SpanDict(s->completion) : py::none();
  return std::move(d);
}

nlohmann::ordered_json ViewJson(const Route& r) {
  tools::RouteViewInput view;
  view.route = r.result.get();
  view.tests = r.tests.get();
  view.from_reference.assign(r.tests->size(), false);
  view.candidate = r.record.program;
  view.reference = r.reference;
  return tools::RouteJson(view);
}

// {"record": <the egca-batch store record>, "route": <egca-trace --json's document>}.
std::string RouteToJson(const Route& r, int indent) {
  nlohmann::ordered_json j;
  j["record"] = nlohmann::ordered_json::parse(batch::SampleRecordJson(r.record));
  j["route"] = ViewJson(r);
  return j.dump(indent);
}

// ---------------------------------------------------------------- route_batch

struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/egca-python-XXXXXX";
    if (mkdtemp(pattern) == nullptr) {
      Raise(PyExc_OSError,
            std::string("cannot create a temporary directory in /tmp: ") + std::strerror(errno));
    }
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// `executors`: the persistent pool's (RoutePool), borrowed, one per worker; empty: the
// runner starts `workers` executors of its own for this call (egca-batch's behaviour).
std::vector<Route> RouteBatch(const ProblemSet& problems,
                              const std::vector<datasets::Sample>& samples, int workers,
                              bool progress, const RouteSettings& settings,
                              const std::vector<tracer::Executor*>& executors = {}) {
  const ProblemSetData& set = *problems.data;
  if (workers < 0) Raise(PyExc_ValueError, "workers must be >= 0 (0: every core)");
  // Problems of the samples: unknown ids and problems without tests are the caller's
  // mistake here (egca-batch reports them as bad records and goes on).
  std::vector<std::shared_ptr<const std::vector<tracer::TestCase>>> tests(set.problems.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    size_t p = set.Find(samples[i].problem_id);
    if (set.problems[p].tests.empty()) {
      Raise(PyExc_ValueError,
            fmt::format("sample {}: problem {} has no tests", i, samples[i].problem_id));
    }
    if (set.problems[p].language != "python") {
      Raise(PyExc_ValueError, fmt::format("sample {}: problem {} is {} (only Python problems are "
                                          "routed from Python; use egca-batch for C++)",
                                          i, samples[i].problem_id, set.problems[p].language));
    }
    if (!tests[p]) {
      tests[p] = std::make_shared<const std::vector<tracer::TestCase>>(set.problems[p].tests);
    }
  }
  std::vector<std::optional<Route>> routes(samples.size());
  batch::RunStats stats;
  Status status;
  TempDir dir;  // the runner's result store (egca-batch's own), removed on return
  std::atomic<bool> stop{false};
  {
    py::gil_scoped_release release;
    batch::RunConfig config;
    config.problems_path = set.path;
    config.samples_path = "<python>";
    config.timeout_seconds = settings.timeout;
    config.runtime_error_is_logic = settings.runtime_error_is_logic;
    config.check_comparability = settings.check_comparability;
    config.passing_bypasses_gates = settings.passing_bypasses_gates;
    config.constraints = settings.constraints;
    config.seed = settings.seed;
    auto store = batch::ResultStore::Open(dir.path + "/store", config);
    if (!store.ok()) {
      status = store.status();
    } else {
      batch::RunnerOptions options;
      options.workers = workers;
      options.python_executors = executors;
      options.router = settings.Router();
      options.constraint_source = settings.constraints == "extract"
                                      ? batch::ConstraintSource::kExtract
                                      : batch::ConstraintSource::kNone;
      options.progress.enabled = progress;
      options.on_record = [&](size_t sample, const batch::SampleRecord& record,
                              const gates::RouteResult& result, const gates::Problem& routed) {
        Route r;
        r.record = record;
        r.result = std::make_shared<const gates::RouteResult>(result);
        r.tests = tests[set.index.at(samples[sample].problem_id)];
        r.reference = routed.reference;
        r.completion = samples[sample].completion;
        routes[sample] = std::move(r);  // each sample's slot is written by one worker only
      };
      options.stop = &stop;
      // The batch runs on its own thread; this one checks for Ctrl-C (Python's signal
      // handlers run only on the main thread, with the GIL) and stops the workers, which
      // finish the program in hand.
      bool interrupted = false;
      bool finished = false;
      std::mutex mu;
      std::condition_variable done;
      std::thread runner([&] {
        auto ran = batch::RunBatch(set.problems, samples, {}, store.value().get(), options);
        if (!ran.ok()) {
          status = ran.status();
        } else {
          stats = ran.value();
        }
        std::lock_guard<std::mutex> lock(mu);
        finished = true;
        done.notify_all();
      });
      for (;;) {
        {
          std::unique_lock<std::mutex> lock(mu);
          if (done.wait_for(lock, std::chrono::milliseconds(100), [&] { return finished; })) break;
        }
        if (interrupted) continue;
        py::gil_scoped_acquire acquire;
        if (PyErr_CheckSignals() != 0) {
          interrupted = true;
          stop = true;
        }
      }
      runner.join();
      if (interrupted) {
        py::gil_scoped_acquire acquire;
        throw py::error_already_set();  // the KeyboardInterrupt PyErr_CheckSignals set
      }
    }
  }
  ThrowIfError(status, "route_batch");
  std::vector<Route> out;
  out.reserve(routes.size());
  for (size_t i = 0; i < routes.size(); ++i) {
    if (!routes[i]) {
      Raise(PyExc_RuntimeError,
            fmt::format("route_batch: sample {} ({}) was not routed ({} egca errors; the "
                        "program may be over 1 MiB or not UTF-8)",
                        i, samples[i].problem_id, stats.errors));
    }
    out.push_back(std::move(*routes[i]));
  }
  return out;
}

// ---------------------------------------------------------------- RoutePool

// Python executors kept across route_batch calls, so that a training loop's per-step
// routing does not start (and warm) a fork server per worker on every call. Executors are
// started on first need (at most `workers`, and no more than a call has samples) and live
// until close(). One call at a time; other callers wait (with the GIL released).
class RoutePool {
 public:
  explicit RoutePool(int workers) {
    if (workers < 0) Raise(PyExc_ValueError, "workers must be >= 0 (0: every core)");
    workers_ =
        workers > 0 ? workers : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  ~RoutePool() {
    // The servers end when their socket closes (Executor's destructor); no Python here.
    std::lock_guard<std::mutex> lock(*mu_);
    executors_.clear();
  }

  std::vector<Route> Run(const ProblemSet& problems, const std::vector<datasets::Sample>& samples,
                         bool progress, const RouteSettings& settings) {
    std::unique_lock<std::mutex> lock(*mu_, std::defer_lock);
    {
      py::gil_scoped_release release;
      lock.lock();
    }
    if (closed_) Raise(PyExc_RuntimeError, "route_batch: the RoutePool is closed");
    const size_t want =
        std::min<size_t>(static_cast<size_t>(workers_), std::max<size_t>(1, samples.size()));
    if (executors_.size() < want) {
      Status status;
      {
        py::gil_scoped_release release;
        while (executors_.size() < want) {
          auto executor = tracer::Executor::Create({});
          if (!executor.ok()) {
            status = executor.status();
            break;
          }
          executors_.push_back(std::move(executor).value());
          ++started_;
        }
      }
      ThrowIfError(status, "route_batch: starting the pool's executors");
    }
    std::vector<tracer::Executor*> borrowed;
    for (auto& e : executors_) borrowed.push_back(e.get());
    return RouteBatch(problems, samples, static_cast<int>(borrowed.size()), progress, settings,
                      borrowed);
  }

  // Stops every server (waits for a call in flight). Idempotent; the pool is unusable after.
  void Close() {
    std::vector<std::unique_ptr<tracer::Executor>> stopping;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(*mu_);
      closed_ = true;
      stopping.swap(executors_);
      stopping.clear();  // each server is told to exit and reaped
    }
  }

  // In the child of a fork() of the owning process: the servers belong to the parent. Forget
  // them without a word to them (they are not this process's children, and stopping them
  // would break the parent's pool); the next call here starts servers of the child's own.
  // The lock may have been held by another thread of the parent: a fresh one replaces it.
  void AbandonAfterFork() {
    for (auto& e : executors_) static_cast<void>(e.release());
    executors_.clear();
    static_cast<void>(mu_.release());  // possibly locked by a thread that does not exist here
    mu_ = std::make_unique<std::mutex>();
  }

  int workers() const { return workers_; }
  size_t running() const { return executors_.size(); }  // executors started and alive
  size_t started() const { return started_; }           // executors started in all
  bool closed() const { return closed_; }

 private:
  int workers_ = 1;
  std::unique_ptr<std::mutex> mu_ = std::make_unique<std::mutex>();
  std::vector<std::unique_ptr<tracer::Executor>> executors_;
  size_t started_ = 0;
  bool closed_ = false;
};

// ---------------------------------------------------------------- Router

class Router {
 public:
  Router(const ProblemSet& problems, const std::string& problem_id, const RouteSettings& settings)
      : set_(problems.data), index_(set_->Find(problem_id)), settings_(settings) {
    const datasets::ProblemRecord& problem = set_->problems[index_];
    if (problem.tests.empty()) Raise(PyExc_ValueError, "problem " + problem_id + " has no tests");
    if (problem.language != "python") {
      Raise(PyExc_ValueError, "problem " + problem_id + " is " + problem.language +
                                  " (only Python problems are routed from Python)");
    }
    tests_ = std::make_shared<const std::vector<tracer::TestCase>>(problem.tests);
    Status status;
    {
      py::gil_scoped_release release;
      status = SetUp(problem);
    }
    ThrowIfError(status, "Router(" + problem_id + ")");
  }

  Route RouteOne(const py::object& completion, const py::object& completion_is_body,
                 const std::string& model) {
    const datasets::ProblemRecord& problem = set_->problems[index_];
    datasets::Sample sample;
    sample.problem_id = problem.id;
    sample.completion = Utf8Argument(completion, "completion");
    sample.model = model;
    if (completion_is_body.is_none()) {
      sample.detect_body = true;
    } else {
      sample.completion_is_body = completion_is_body.cast<bool>();
    }
    Route out;
    Status status;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);  // one Executor serves one call at a time
      datasets::SampleProgram program = datasets::ProgramOf(sample, problem);
      const bool bare = kind_ == batch::ReferenceKind::kNone || program.empty;
      auto routed = (bare ? bare_router_ : router_)->Route(program.code, routing_);
      if (!routed.ok()) {
        status = routed.status();
      } else {
        out.record = batch::MakeRecord(sample, problem, program, routed.value(), kind_);
        out.result = std::make_shared<const gates::RouteResult>(std::move(routed).value());
      }
    }
    ThrowIfError(status, "route");
    out.tests = tests_;
    out.reference = routing_.reference;
    out.completion = sample.completion;
    return out;
  }

  std::string problem_id() const { return set_->problems[index_].id; }
  std::string reference_kind() const { return batch::ReferenceKindName(kind_); }
  std::string reference() const { return routing_.reference; }

 private:
  // The reference as egca-batch chooses it: the first of the data set's references that
  // parses and passes every test. Without one the router only grades (a stand-in needs
  // other samples of the problem: route_batch finds one).
  Status SetUp(const datasets::ProblemRecord& problem) {
    tracer::ExecutorOptions eo;
    EGCA_ASSIGN_OR_RETURN(executor_, tracer::Executor::Create(eo));
    gates::RouterOptions o = settings_.Router();
    o.run.apps_import_header = problem.apps_conventions;
    tracer::RunOptions run = o.run;
    run.trace_mode = tracer::TraceMode::kNone;
    run.stop_on_first_failure = true;
    routing_.tests = problem.tests;
    kind_ = batch::ReferenceKind::kNone;
    for (const std::string& ref : problem.references) {
      if (!diff::PreparedProgram::Build(ref).ok()) continue;
      EGCA_ASSIGN_OR_RETURN(tracer::ProgramResult graded,
                            executor_->RunAll(ref, problem.tests, run));
      if (graded.all_passed()) {
        routing_.reference = ref;
        kind_ = batch::ReferenceKind::kGiven;
        break;
      }
    }
    if (kind_ == batch::ReferenceKind::kNone) routing_.reference = "pass\n";
    if (settings_.constraints == "extract" && kind_ != batch::ReferenceKind::kNone) {
      gates::ExtractionPolicy policy;
      auto specs = gates::ExtractConstraints(routing_.reference, policy, problem.prompt);
      if (!specs.ok()) return specs.status();
      EGCA_ASSIGN_OR_RETURN(routing_.constraints, gates::MakeConstraintSet(specs.value()));
    }
    router_ = std::make_unique<gates::Router>(executor_.get(), o);
    gates::RouterOptions bare = o;
    bare.check_comparability = false;
    bare.localize = false;
    bare_router_ = std::make_unique<gates::Router>(executor_.get(), bare);
    return Status::Ok();
  }

  std::shared_ptr<const ProblemSetData> set_;
  size_t index_;
  RouteSettings settings_;
  std::shared_ptr<const std::vector<tracer::TestCase>> tests_;
  std::unique_ptr<tracer::Executor> executor_;
  std::unique_ptr<gates::Router> router_, bare_router_;
  gates::Problem routing_;
  batch::ReferenceKind kind_ = batch::ReferenceKind::kNone;
  std::mutex mu_;
};

// ---------------------------------------------------------------- trace

std::string Trace(const py::object& candidate, const py::object& reference,
                  const std::string& tests_json, const tracer::TestArgs& args,
                  const RouteSettings& settings) {
  std::string cand = Utf8Argument(candidate, "candidate");
  std::string ref = Utf8Argument(reference, "reference");
  auto blank = [](const std::string& s) {
    return s.find_first_not_of(" \t\r\n\f\v") == std::string::npos;
  };
  if (blank(cand)) Raise(PyExc_ValueError, "candidate: the program is empty");
  if (blank(ref)) Raise(PyExc_ValueError, "reference: the program is empty");
  std::vector<tracer::TestCase> tests = tests_json.empty()
                                            ? Unwrap(tracer::BuildTests(args), "tests")
                                            : Unwrap(tracer::ParseTestsJson(tests_json, "tests"));
  if (tests.empty()) Raise(PyExc_ValueError, "tests: no test given");
  if (auto p = diff::PreparedProgram::Build(ref); !p.ok()) {
    Raise(PyExc_ValueError, "reference: " + p.status().message());
  }
  std::string out;
  Status status;
  {
    py::gil_scoped_release release;
    status = [&]() -> Status {
      EGCA_ASSIGN_OR_RETURN(auto executor, tracer::Executor::Create({}));
      tracer::RunOptions reference_run;
      reference_run.limits.wall_seconds = settings.timeout;
      reference_run.limits.cpu_seconds = settings.timeout;
      std::vector<bool> from_reference;
      EGCA_RETURN_IF_ERROR(tools::CheckReference(*executor, ref, "reference", reference_run, &tests,
                                                 &from_reference));
      gates::Router router(executor.get(), settings.Router());
      gates::Problem problem;
      problem.reference = ref;
      problem.tests = tests;
      EGCA_ASSIGN_OR_RETURN(gates::RouteResult routed, router.Route(cand, problem));
      tools::RouteViewInput view;
      view.route = &routed;
      view.tests = &problem.tests;
      view.from_reference = from_reference;
      view.candidate_path = "candidate";
      view.candidate = cand;
      view.reference_path = "reference";
      view.reference = ref;
      out = tools::RouteJson(view).dump(2);
      return Status::Ok();
    }();
  }
  ThrowIfError(status, "trace");
  return out;
}

}  // namespace

void BindRouting(py::module_& m) {
  py::class_<Route>(m, "Route", "The route of one completion (see docs/python.md).")
      .def_property_readonly("problem_id", [](const Route& r) { return r.record.problem; })
      .def_property_readonly("mode",
                             [](const Route& r) { return credit::FailureModeName(r.record.mode); })
      .def_property_readonly("reason", [](const Route& r) { return r.record.reason; })
      .def_property_readonly("r_hat", [](const Route& r) { return r.result->pass_fraction; })
      .def_property_readonly("reward", [](const Route& r) { return r.result->reward; })
      .def_property_readonly("i_c", [](const Route& r) { return r.result->constraints_satisfied; })
      .def_property_readonly("i_cmp",
                             [](const Route& r) -> py::object {
                               if (!r.result->comparability) return py::none();
                               return py::bool_(r.result->comparability->comparable);
                             })
      .def_property_readonly("similarity",
                             [](const Route& r) -> py::object {
                               if (!r.result->comparability) return py::none();
                               return py::float_(r.result->comparability->score);
                             })
      .def_property_readonly("passes",
                             [](const Route& r) { return r.result->grading.all_passed(); })
      .def_property_readonly("empty", [](const Route& r) { return r.record.empty; })
      .def_property_readonly("violations",
                             [](const Route& r) {
                               py::list out;
                               for (const auto& v : r.result->constraint_violations) {
                                 py::dict d;
                                 d["constraint"] = v.constraint;
                                 d["message"] = v.message;
                                 d["span"] = SpanDict(v.span);
                                 out.append(d);
                               }
                               return out;
                             })
      .def_property_readonly("verdicts",
                             [](const Route& r) { return ToPython(ViewJson(r)["tests"]); })
      .def_property_readonly("first_failing_test",
                             [](const Route& r) -> py::object {
                               if (r.result->first_failing_test < 0) return py::none();
                               return py::int_(r.result->first_failing_test);
                             })
      .def_property_readonly("error_message", [](const Route& r) { return r.record.error_message; })
      .def_property_readonly("error_type", [](const Route& r) { return r.record.error_type; })
      .def_property_readonly("error_name", [](const Route& r) { return r.record.error_name; })
      .def_property_readonly("localization_note",
                             [](const Route& r) { return r.result->localization_note; })
      .def_property_readonly("localization_confidence",
                             [](const Route& r) -> py::object {
                               if (!r.record.localization_confidence) return py::none();
                               return py::float_(*r.record.localization_confidence);
                             })
      .def_property_readonly("divergence",
                             [](const Route& r) -> py::object {
                               auto j = ViewJson(r);
                               if (!j.contains("divergence")) return py::none();
                               return ToPython(j["divergence"]);
                             })
      .def_property_readonly("spans",
                             [](const Route& r) {
                               py::dict d;
                               d["error"] = LocatedDict(r.record.error);
                               d["cause"] = LocatedDict(r.record.cause);
                               d["earliest"] = LocatedDict(r.record.earliest);
                               d["last"] = LocatedDict(r.record.last);
                               d["random"] = LocatedDict(r.record.random);
                               return d;
                             })
      .def_property_readonly("program", [](const Route& r) { return r.record.program; })
      .def_property_readonly("completion", [](const Route& r) { return r.completion; })
      .def_property_readonly("reference", [](const Route& r) { return r.reference; })
      .def_property_readonly(
          "reference_kind",
          [](const Route& r) { return batch::ReferenceKindName(r.record.reference); })
      .def_property_readonly("grade_seconds",
                             [](const Route& r) { return r.result->grade_seconds; })
      .def_property_readonly("localize_seconds",
                             [](const Route& r) { return r.result->localize_seconds; })
      .def(
          "record_json", [](const Route& r) { return batch::SampleRecordJson(r.record); },
          "The line egca-batch's store holds for this sample (without the store's crc).")
      .def("to_json", &RouteToJson, py::arg("indent") = -1,
           "{\"record\": the egca-batch record, \"route\": egca-trace --json's document}")
      .def("__repr__", [](const Route& r) {
        return fmt::format("<egca.Route {} {} R_hat={:.3f}>", r.record.problem,
                           credit::FailureModeName(r.record.mode), r.result->pass_fraction);
      });

  py::class_<Router>(m, "Router", "Routes completions of one problem (one warm executor).")
      .def(py::init([](const ProblemSet& problems, const std::string& problem_id, double timeout,
                       bool rel, bool cmp, bool bypass, uint64_t seed,
                       const std::string& constraints) {
             return std::make_unique<Router>(
                 problems, problem_id, MakeSettings(timeout, rel, cmp, bypass, seed, constraints));
           }),
           py::arg("problems"), py::arg("problem_id"), EGCA_ROUTE_SETTINGS_ARGS)
      .def("route", &Router::RouteOne, py::arg("completion"),
           py::arg("completion_is_body") = py::none(), py::arg("model") = "")
      .def_property_readonly("problem_id", &Router::problem_id)
      .def_property_readonly("reference_kind", &Router::reference_kind)
      .def_property_readonly("reference", &Router::reference);

  m.def(
      "route_samples",
      [](const ProblemSet& problems, const std::vector<datasets::Sample>& samples, int workers,
         bool progress, double timeout, bool rel, bool cmp, bool bypass, uint64_t seed,
         const std::string& constraints) {
        return RouteBatch(problems, samples, workers, progress,
                          MakeSettings(timeout, rel, cmp, bypass, seed, constraints));
      },
      py::arg("problems"), py::arg("samples"), py::arg("workers") = 0, py::arg("progress") = false,
      EGCA_ROUTE_SETTINGS_ARGS,
      "egca-batch's runner on `samples`: one Route per sample, in order.");

  py::class_<RoutePool>(m, "RoutePool",
                        "Python executors kept across route_batch calls (see egca.RoutePool).")
      .def(py::init<int>(), py::arg("workers") = 0)
      .def(
          "route_samples",
          [](RoutePool& pool, const ProblemSet& problems,
             const std::vector<datasets::Sample>& samples, bool progress, double timeout, bool rel,
             bool cmp, bool bypass, uint64_t seed, const std::string& constraints) {
            return pool.Run(problems, samples, progress,
                            MakeSettings(timeout, rel, cmp, bypass, seed, constraints));
          },
          py::arg("problems"), py::arg("samples"), py::arg("progress") = false,
          EGCA_ROUTE_SETTINGS_ARGS)
      .def("close", &RoutePool::Close)
      .def("abandon_after_fork", &RoutePool::AbandonAfterFork)
      .def_property_readonly("workers", &RoutePool::workers)
      .def_property_readonly("running", &RoutePool::running)
      .def_property_readonly("started", &RoutePool::started)
      .def_property_readonly("closed", &RoutePool::closed);

  m.def(
      "trace_json",
      [](const py::object& candidate, const py::object& reference, const std::string& tests_json,
         const std::string& tests_file, const std::string& fn,
         const std::vector<std::string>& inputs, const std::vector<std::string>& expects,
         const std::vector<std::string>& stdin_files,
         const std::vector<std::string>& expect_stdout_files, const std::string& setup_file,
         const std::string& entry_point, double timeout, bool rel, bool cmp, bool bypass,
         uint64_t seed) {
        tracer::TestArgs args;
        args.function = fn;
        args.inputs = inputs;
        args.expects = expects;
        args.stdin_files = stdin_files;
        args.expect_stdout_files = expect_stdout_files;
        args.tests_file = tests_file;
        args.setup_file = setup_file;
        args.entry_point = entry_point;
        return Trace(candidate, reference, tests_json, args,
                     MakeSettings(timeout, rel, cmp, bypass, seed, "none"));
      },
      py::arg("candidate"), py::arg("reference"), py::kw_only(), py::arg("tests_json") = "",
      py::arg("tests_file") = "", py::arg("fn") = "",
      py::arg("inputs") = std::vector<std::string>{},
      py::arg("expects") = std::vector<std::string>{},
      py::arg("stdin_files") = std::vector<std::string>{},
      py::arg("expect_stdout_files") = std::vector<std::string>{}, py::arg("setup_file") = "",
      py::arg("entry_point") = "", py::arg("timeout") = 10.0,
      py::arg("runtime_error_is_logic") = false, py::arg("check_comparability") = true,
      py::arg("passing_bypasses_gates") = false, py::arg("seed") = 0,
      "What `egca-trace --json` prints, as a JSON string.");
}

}  // namespace egca::python
