// egca-batch: failure-mode statistics over a whole sample set. Routes every (problem, sample)
// pair through the router (SYNTAX / CONSTRAINT / LOGIC / CORRECT, earliest divergence) with
// all cores, into a resumable, shardable result store, and reports mode fractions, K,
// trigger rate, divergence positions and timing as JSON, Markdown and SVG.
//
//   egca-batch run --problems HumanEval.jsonl.gz --samples codet.jsonl.gz
//       --samples-source codet --store out/codet
//   egca-batch run ... --shard 0/3 --store out/s0     (any machine / array task)
//   egca-batch merge out/all out/s0 out/s1 out/s2
//   egca-batch report out/codet                       (report.json / .md / .svg)
//   egca-batch show out/codet 1f2e3d4c5b6a7980 [--html s.html]   one sample's route and trace
//   egca-batch convert --source mapcoder --in final-results.tar.gz --problems apps.jsonl
//       --dataset APPS --out samples.jsonl
//
// Exit status: 0 done; 1 egca itself failed on some programs (they stay pending; run again)
// or the run was interrupted (SIGINT/SIGTERM; run again to resume); 2 bad usage, unreadable
// input, or a store that does not match the run.
#include <fmt/format.h>

#include <unistd.h>
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "egca/batch/records.h"
#include "egca/batch/report.h"
#include "egca/batch/runner.h"
#include "egca/batch/store.h"
#include "egca/core/files.h"
#include "egca/cpp/router.h"
#include "egca/gates/constraints.h"
#include "egca/tools/cli.h"
#include "cpp_batch.h"
#include "egca/tools/trace_view.h"
#include "egca_commit.h"  // generated: EGCA_COMMIT, the commit this binary was built from

namespace {

using namespace egca::batch;
using egca::tools::kExitUsage;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr const char* kTool = "egca-batch";

std::atomic<bool> g_stop{false};

void OnSignal(int) {
  if (g_stop.exchange(true)) {
    // Second signal: stop now (the store stays consistent; the last line may be torn).
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    std::raise(SIGTERM);
  }
}

int Fail(int code, const std::string& line) {
  std::cerr << kTool << ": " << line << "\n";
  return code;
}

// Fnv1a64 of a file's bytes, or of a directory's files (relative paths and contents, sorted).
egca::StatusOr<std::string> Digest(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> files;
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (it->is_regular_file()) files.push_back(it->path().string());
    }
    std::sort(files.begin(), files.end());
    uint64_t h = Fnv1a64("");
    for (const auto& f : files) {
      EGCA_ASSIGN_OR_RETURN(std::string data, egca::ReadFile(f));
      h = Fnv1a64(fs::relative(f, path).string(), h);
      h = Fnv1a64(data, h);
    }
    return HexKey(h);
  }
  EGCA_ASSIGN_OR_RETURN(std::string data, egca::ReadFile(path));
  return HexKey(Fnv1a64(data));
}

bool ParseShard(const std::string& text, int32_t* index, int32_t* count) {
  size_t slash = text.find('/');
  if (slash == std::string::npos) return false;
  try {
    size_t a = 0, b = 0;
    int i = std::stoi(text.substr(0, slash), &a);
    int n = std::stoi(text.substr(slash + 1), &b);
    if (a != slash || b != text.size() - slash - 1 || n < 1 || i < 0 || i >= n) return false;
    *index = i;
    *count = n;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

void PrintBad(const LoadReport& report, size_t max_lines) {
  size_t shown = 0;
  for (const auto& b : report.bad) {
    if (++shown > max_lines) {
      std::cerr << kTool << ": ... " << report.bad.size() - max_lines
                << " more bad records (all of them are in the report)\n";
      break;
    }
    std::cerr << kTool << ": bad record: " << b.ToString() << "\n";
  }
}

void PrintSummary(const Report& report) {
  const ReportSummary& s = report.summary;
  fmt::print("{} samples, {} problems:", s.samples, s.problems);
  for (auto m : {FailureMode::kSyntax, FailureMode::kConstraint, FailureMode::kLogic,
                 FailureMode::kCorrect}) {
    fmt::print(" {} {:.1f}%", egca::credit::FailureModeName(m), 100 * s.modes.fraction(m));
  }
  if (s.empty > 0) fmt::print("  ({} empty samples apart)", s.empty);
  fmt::print("\npass every test {} ({:.1f}%)", s.passing,
             s.samples ? 100.0 * static_cast<double>(s.passing) / s.samples : 0.0);
  for (size_t i = 0; i < kPassAtK.size(); ++i) {
    if (s.pass_at[i]) fmt::print("  pass@{} {:.2f}%", kPassAtK[i], 100 * *s.pass_at[i]);
  }
  fmt::print("\nK {:.2f}  trigger rate {:.1f}%  stand-ins {}  no reference {}  bad records {}\n",
             s.k_mean, 100 * s.trigger_rate, s.references_stand_in, s.references_none,
             s.bad.size());
  if (report.timing.wall_seconds > 0) {
    fmt::print("wall {:.1f} s, {:.1f} samples/s\n", report.timing.wall_seconds,
               report.timing.samples_per_second);
  }
}

// Some sample must belong to one of the problems: a run where none does is a mistake
// (another data set, another id scheme), not an empty result.
egca::Status CheckSamplesMatch(const std::vector<ProblemRecord>& problems,
                               const std::vector<Sample>& samples, const std::string& path) {
  if (samples.empty()) return egca::Status::Ok();
  std::vector<std::string> ids;
  std::set<std::string> known;
  for (const ProblemRecord& p : problems) {
    ids.push_back(p.id);
    known.insert(p.id);
  }
  for (const Sample& s : samples) {
    if (known.count(s.problem_id)) return egca::Status::Ok();
  }
  std::string nearest = NearestProblemId(samples.front().problem_id, ids);
  return egca::InvalidArgument(fmt::format(
      "{}: no sample matches a problem of --problems (the first is for \"{}\"{})", path,
      samples.front().problem_id, nearest.empty() ? "" : ", did you mean " + nearest + "?"));
}

// The loader options a store's problems_format records ("auto+id_prefix=x+...", as Run
// writes it), so `show` loads the same problems.
egca::StatusOr<DatasetOptions> OptionsOfStore(const RunConfig& config) {
  DatasetOptions options;
  std::vector<std::string> parts;
  size_t start = 0;
  const std::string& text = config.problems_format;
  while (true) {
    size_t plus = text.find('+', start);
    parts.push_back(
        text.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  EGCA_ASSIGN_OR_RETURN(options.format, ParseDatasetFormat(parts[0]));
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    if (p == "mapcoder_call_tests=call") {
      options.mapcoder_call_tests = MapCoderCallTests::kCall;
    } else if (p.rfind("field:", 0) == 0) {
      EGCA_RETURN_IF_ERROR(SetAppsPlusField(&options.apps_plus, p.substr(6)));
    } else if (p.rfind("id_prefix=", 0) == 0) {
      options.id_prefix = p.substr(10);
    } else if (p == "mbpp_challenge_tests") {
      options.mbpp_challenge_tests = true;
    } else if (p.rfind("max_problems=", 0) == 0) {
      options.limit = std::stoll(p.substr(13));
    } else {
      return egca::InvalidArgument(
          fmt::format("problems_format \"{}\": unknown part \"{}\"", text, p));
    }
  }
  return options;
}

// One stored sample routed again, as it was routed in the run.
struct StoredRoute {
  egca::gates::RouteResult route;
  std::vector<egca::tracer::TestCase> tests;
  std::string reference, reference_name, sample_name;
};

// Routes `record`'s stored program again against the reference its problem was routed
// against (given, or the stand-in's stored program), with the store's options. `problems`
// are the store's problems (LoadProblems with OptionsOfStore). Errors are one line.
egca::StatusOr<StoredRoute> RouteStoredSample(const StoreContents& store,
                                              const std::vector<ProblemRecord>& problems,
                                              const SampleRecord& record,
                                              egca::tracer::Executor* executor,
                                              std::unique_ptr<egca::cpp::CppExecutor>* cpp) {
  if (record.program.empty()) {
    return egca::FailedPrecondition(fmt::format(
        "the store predates stored programs (sample {} has none); run it again with this "
        "egca-batch",
        record.key));
  }
  const ProblemResolution* resolution = nullptr;
  for (const ProblemResolution& p : store.problems) {
    if (p.problem == record.problem) resolution = &p;
  }
  if (resolution == nullptr) {
    return egca::FailedPrecondition("no problem line for " + record.problem);
  }
  const ProblemRecord* problem = nullptr;
  for (const ProblemRecord& p : problems) {
    if (p.id == record.problem) problem = &p;
  }
  if (problem == nullptr) {
    return egca::FailedPrecondition(fmt::format("problem {} is not in {} any more", record.problem,
                                                store.config.problems_path));
  }
  StoredRoute out;
  egca::gates::Problem routing;
  routing.tests = problem->tests;
  egca::gates::RouterOptions router;
  router.run.limits.wall_seconds = store.config.timeout_seconds;
  router.run.limits.cpu_seconds = store.config.timeout_seconds;
  router.run.apps_import_header = problem->apps_conventions;
  router.run.apps_allclose = store.config.apps_allclose;
  router.runtime_error_is_logic = store.config.runtime_error_is_logic;
  router.check_comparability = store.config.check_comparability;
  router.passing_bypasses_gates = store.config.passing_bypasses_gates;
  router.divergence.random_seed = store.config.seed;
  switch (resolution->reference) {
    case ReferenceKind::kGiven:
      if (resolution->reference_index < 0 ||
          static_cast<size_t>(resolution->reference_index) >= problem->references.size()) {
        return egca::FailedPrecondition(
            fmt::format("the store names reference {} of {}, which has {}",
                        resolution->reference_index + 1, problem->id, problem->references.size()));
      }
      routing.reference = problem->references[resolution->reference_index];
      out.reference_name =
          fmt::format("reference {} of {}", resolution->reference_index + 1, problem->id);
      break;
    case ReferenceKind::kStandIn:
      for (const SampleRecord& r : store.samples) {
        if (r.problem == record.problem && r.key == resolution->stand_in_key) {
          routing.reference = r.program;
        }
      }
      if (routing.reference.empty()) {
        return egca::FailedPrecondition(fmt::format("the stand-in sample {} has no stored program",
                                                    resolution->stand_in_key));
      }
      out.reference_name = "stand-in sample " + resolution->stand_in_key;
      break;
    case ReferenceKind::kNone:
      routing.reference = problem->language == "cpp" ? "" : "pass\n";
      router.check_comparability = false;
      router.localize = false;
      out.reference_name = "no reference (graded only)";
      break;
  }
  if (record.empty) {
    router.check_comparability = false;
    router.localize = false;
  }
  if (problem->language == "cpp") {
    // Created on the first C++ sample. Its fork server is its own program
    // (egca-cpp-server), so a candidate cannot find the expected outputs loaded here.
    if (*cpp == nullptr) {
      EGCA_ASSIGN_OR_RETURN(*cpp, egca::cpp::CppExecutor::Create({}));
    }
    egca::cpp::CppRouterOptions o;
    o.run = router.run;
    o.runtime_error_is_logic = router.runtime_error_is_logic;
    o.localize = router.localize;
    o.seed = router.divergence.random_seed;
    o.check_comparability = router.check_comparability;
    o.passing_bypasses_gates = router.passing_bypasses_gates;
    egca::cpp::CppRouter r(cpp->get(), o);
    EGCA_ASSIGN_OR_RETURN(auto routed, r.Route(record.program, routing));
    out.route = std::move(routed.route);
  } else {
    egca::gates::Router r(executor, router);
    EGCA_ASSIGN_OR_RETURN(out.route, r.Route(record.program, routing));
  }
  out.tests = std::move(routing.tests);
  out.reference = std::move(routing.reference);
  out.sample_name =
      fmt::format("sample {}#{} of {} ({}{})", record.key, record.dup, record.problem,
                  record.origin, record.model.empty() ? "" : ", " + record.model);
  return out;
}

egca::tools::RouteViewInput ViewOf(const StoredRoute& routed, const SampleRecord& record) {
  egca::tools::RouteViewInput view;
  view.route = &routed.route;
  view.tests = &routed.tests;
  view.candidate_path = routed.sample_name;
  view.candidate = record.program;
  view.reference_path = routed.reference_name;
  view.reference = routed.reference;
  return view;
}

egca::StatusOr<std::vector<ProblemRecord>> ProblemsOfStore(const StoreContents& store) {
  EGCA_ASSIGN_OR_RETURN(DatasetOptions options, OptionsOfStore(store.config));
  LoadReport loaded;
  return LoadProblems(store.config.problems_path, options, &loaded);
}

// report --views: an HTML view of every example the report lists, in OUT/views/, linked
// from report.md. Returns the written views by "KEY#DUP" (relative paths).
egca::StatusOr<std::map<std::string, std::string>> WriteExampleViews(const StoreContents& store,
                                                                     const Report& report,
                                                                     const std::string& out_dir) {
  std::map<std::string, std::string> written;
  if (report.summary.examples.empty()) return written;
  EGCA_ASSIGN_OR_RETURN(std::vector<ProblemRecord> problems, ProblemsOfStore(store));
  EGCA_ASSIGN_OR_RETURN(auto executor, egca::tracer::Executor::Create({}));
  std::unique_ptr<egca::cpp::CppExecutor> cpp_executor;
  std::error_code ec;
  std::filesystem::create_directories(out_dir + "/views", ec);
  for (const ExampleRef& e : report.summary.examples) {
    const std::string id = fmt::format("{}#{}", e.key, e.dup);
    if (written.count(id)) continue;
    const SampleRecord* record = nullptr;
    for (const SampleRecord& r : store.samples) {
      if (r.problem == e.problem && r.key == e.key && r.dup == e.dup) record = &r;
    }
    if (record == nullptr) continue;
    EGCA_ASSIGN_OR_RETURN(StoredRoute routed,
                          RouteStoredSample(store, problems, *record, executor.get(), &cpp_executor));
    const std::string relative = fmt::format("views/{}-{}.html", e.key, e.dup);
    EGCA_RETURN_IF_ERROR(egca::WriteFileAtomic(out_dir + "/" + relative,
                                               egca::tools::RouteHtml(ViewOf(routed, *record))));
    written[id] = relative;
  }
  return written;
}

struct ShowArgs {
  std::string store, key, problem, html, color = "auto";
  bool json = false;
  size_t max_steps = 30;
};

// `egca-batch show STORE KEY`: routes one stored sample's program again, against the
// reference its problem was routed against, and prints the route and trace view.
int Show(const ShowArgs& a) {
  auto contents = ReadStore(a.store);
  if (!contents.ok()) return Fail(kExitUsage, contents.status().ToString());
  const StoreContents& store = contents.value();
  int32_t dup = -1;
  std::string key_text = a.key;
  if (size_t hash = key_text.find('#'); hash != std::string::npos) {
    try {
      dup = std::stoi(key_text.substr(hash + 1));
    } catch (const std::exception&) {
      return Fail(kExitUsage, fmt::format("KEY \"{}\": expected HEX or HEX#DUP", a.key));
    }
    key_text.resize(hash);
  }
  // A key, or a prefix of one (at least 8 hex digits), as results.jsonl / report.md give it.
  const bool hex = key_text.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!hex || key_text.size() < 8 || key_text.size() > 64) {
    return Fail(kExitUsage, fmt::format("KEY \"{}\": expected a sample key of results.jsonl or "
                                        "report.md (8 to 64 lowercase hex digits)",
                                        a.key));
  }
  std::vector<const SampleRecord*> found;
  std::set<std::string> keys_found;
  for (const SampleRecord& r : store.samples) {
    if (r.key.compare(0, key_text.size(), key_text) != 0 || (dup >= 0 && r.dup != dup)) continue;
    if (!a.problem.empty() && r.problem != a.problem) continue;
    found.push_back(&r);
  }
  if (found.empty()) {
    return Fail(kExitUsage, fmt::format("{}: no sample with key {}{}", a.store, a.key,
                                        a.problem.empty() ? "" : " of problem " + a.problem));
  }
  std::set<std::string> problems_found;
  for (const SampleRecord* r : found) {
    problems_found.insert(r->problem);
    keys_found.insert(r->key);
  }
  if (keys_found.size() > 1) {
    return Fail(kExitUsage, fmt::format("KEY \"{}\" is the prefix of {} sample keys ({}, ...); "
                                        "give more digits",
                                        a.key, keys_found.size(), *keys_found.begin()));
  }
  if (problems_found.size() > 1) {
    return Fail(kExitUsage, fmt::format("key {} is a sample of {} problems ({}, ...); give "
                                        "--problem ID",
                                        a.key, problems_found.size(), *problems_found.begin()));
  }
  const SampleRecord& record = *found.front();
  auto problems = ProblemsOfStore(store);
  if (!problems.ok()) return Fail(kExitUsage, a.store + ": " + problems.status().ToString());
  auto executor = egca::tracer::Executor::Create({});
  if (!executor.ok()) return Fail(kExitFailed, executor.status().ToString());
  std::unique_ptr<egca::cpp::CppExecutor> cpp_executor;
  auto routed =
      RouteStoredSample(store, problems.value(), record, executor.value().get(), &cpp_executor);
  if (!routed.ok()) {
    return Fail(
        routed.status().code() == egca::StatusCode::kFailedPrecondition ? kExitUsage : kExitFailed,
        a.store + ": " + routed.status().message());
  }
  egca::tools::RouteViewInput view = ViewOf(routed.value(), record);
  if (a.json) {
    fmt::print("{}\n", egca::tools::RouteJson(view).dump(2));
  } else {
    fmt::print("{}\nstored: {} ({}){}\n\n", routed->sample_name,
               egca::credit::FailureModeName(record.mode), record.reason,
               record.empty ? "; an empty sample" : "");
    egca::tools::TextViewOptions text;
    text.color = a.color == "always" || (a.color == "auto" && isatty(STDOUT_FILENO));
    text.width = egca::tools::TerminalWidth();
    text.max_steps = a.max_steps;
    egca::tools::PrintRouteText(view, text);
  }
  if (routed->route.mode != record.mode) {
    std::cerr << fmt::format("{}: note: routed {} now, the store has {} (egca commit {})\n", kTool,
                             egca::credit::FailureModeName(routed->route.mode),
                             egca::credit::FailureModeName(record.mode), store.config.egca_commit);
  }
  if (!a.html.empty()) {
    egca::Status written = egca::WriteFileAtomic(a.html, egca::tools::RouteHtml(view));
    if (!written.ok()) return Fail(kExitUsage, "--html: " + written.ToString());
    std::cerr << kTool << ": wrote " << a.html << "\n";
  }
  return kExitOk;
}

int WriteAndPrintReport(const std::string& store_dir, const std::string& out_dir,
                        const std::string& title, bool print, bool views = false,
                        uint64_t credit_seed = 0) {
  auto contents = ReadStore(store_dir);
  if (!contents.ok()) return Fail(kExitUsage, contents.status().ToString());
  if (contents->torn_lines > 0 || contents->corrupt_lines > 0) {
    std::cerr << fmt::format("{}: {}: ignored {} torn and {} corrupt lines\n", kTool, store_dir,
                             contents->torn_lines, contents->corrupt_lines);
  }
  ReportOptions options;
  if (!title.empty()) options.title = title;
  options.credit_seed = credit_seed;
  Report report = BuildReport(contents.value(), options);
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (views) {
    auto written = WriteExampleViews(contents.value(), report, out_dir);
    if (!written.ok()) return Fail(kExitUsage, "--views: " + written.status().ToString());
    report.options.example_views = std::move(written).value();
  }
  egca::Status written = WriteReport(report, out_dir);
  if (!written.ok()) return Fail(kExitUsage, written.ToString());
  if (print) PrintSummary(report);
  std::cerr << fmt::format("{}: report written to {}/report.{{json,md,svg}}\n", kTool, out_dir);
  return kExitOk;
}

struct RunArgs {
  std::string problems, format = "auto", samples, samples_source = "egca", store;
  std::string constraints_file, shard = "0/1", progress = "auto", title;
  std::string dataset, run_filter, model, mapcoder_call_tests = "stdio";
  std::vector<std::string> fields;  // APPS+ field mapping, "key=name"
  std::string id_prefix, grading_trace = "auto";
  int64_t max_problems = -1;
  bool mbpp_challenge_tests = false;
  bool extract_constraints = false, runtime_error_is_logic = false, no_comparability = false;
  bool apps_allclose = false;
  bool passing_bypasses_gates = false;
  bool grade_only = false;
  bool all_attempts = false, raw_responses = false;
  int workers = 0;
  double timeout = 5;
  int64_t limit = -1;
  uint64_t max_program_bytes = 1 << 20;
  uint64_t seed = 0;
};

int Run(const RunArgs& a) {
  RunConfig config;
  RunnerOptions options;
  if (!ParseShard(a.shard, &options.shard_index, &options.shard_count)) {
    return Fail(kExitUsage,
                fmt::format("--shard: expected i/N with 0 <= i < N, got \"{}\"", a.shard));
  }
  auto format = ParseDatasetFormat(a.format);
  if (!format.ok()) return Fail(kExitUsage, "--format: " + format.status().message());
  DatasetOptions dataset_options;
  dataset_options.format = format.value();
  dataset_options.mapcoder_call_tests =
      a.mapcoder_call_tests == "call" ? MapCoderCallTests::kCall : MapCoderCallTests::kStdio;
  for (const std::string& f : a.fields) {
    egca::Status st = SetAppsPlusField(&dataset_options.apps_plus, f);
    if (!st.ok()) return Fail(kExitUsage, "--field: " + st.message());
  }
  dataset_options.id_prefix = a.id_prefix;
  dataset_options.mbpp_challenge_tests = a.mbpp_challenge_tests;
  dataset_options.limit = a.max_problems;
  egca::gates::GradingTrace grading_trace;
  if (!egca::gates::ParseGradingTrace(a.grading_trace, &grading_trace)) {
    return Fail(kExitUsage, fmt::format("--grading-trace: expected never, always or auto, got \"{}\"",
                                        a.grading_trace));
  }
  LoadReport problem_report;
  auto problems = LoadProblems(a.problems, dataset_options, &problem_report);
  if (!problems.ok()) return Fail(kExitUsage, problems.status().ToString());
  PrintBad(problem_report, 20);

  LoadReport sample_report;
  egca::StatusOr<std::vector<Sample>> samples = std::vector<Sample>{};
  if (a.samples_source == "egca") {
    samples = LoadSamples(a.samples, &sample_report);
  } else {
    auto source = ParseSampleSource(a.samples_source);
    if (!source.ok()) return Fail(kExitUsage, "--samples-source: " + source.status().message());
    ConvertOptions convert;
    convert.model = a.model;
    convert.dataset = a.dataset;
    convert.run_filter = a.run_filter;
    convert.all_attempts = a.all_attempts;
    convert.raw_responses = a.raw_responses;
    samples = ConvertSamples(a.samples, source.value(), problems.value(), convert, &sample_report);
  }
  if (!samples.ok()) return Fail(kExitUsage, samples.status().ToString());
  PrintBad(sample_report, 20);
  std::cerr << fmt::format("{}: {} problems ({} bad records), {} samples ({} bad records)\n", kTool,
                           problems->size(), problem_report.bad.size(), samples->size(),
                           sample_report.bad.size());
  if (egca::Status matched = CheckSamplesMatch(problems.value(), samples.value(), a.samples);
      !matched.ok()) {
    return Fail(kExitUsage, matched.message());
  }

  config.problems_path = std::filesystem::absolute(a.problems).string();
  config.samples_path = std::filesystem::absolute(a.samples).string();
  auto pd = Digest(a.problems);
  auto sd = Digest(a.samples);
  if (!pd.ok()) return Fail(kExitUsage, pd.status().ToString());
  if (!sd.ok()) return Fail(kExitUsage, sd.status().ToString());
  config.problems_digest = pd.value();
  config.problems_format = a.format;
  if (a.mapcoder_call_tests != "stdio") config.problems_format += "+mapcoder_call_tests=call";
  // Options that change which problems and tests there are: part of the problems' identity.
  for (const std::string& f : a.fields) config.problems_format += "+field:" + f;
  if (!a.id_prefix.empty()) config.problems_format += "+id_prefix=" + a.id_prefix;
  if (a.mbpp_challenge_tests) config.problems_format += "+mbpp_challenge_tests";
  if (a.max_problems >= 0) config.problems_format += fmt::format("+max_problems={}", a.max_problems);
  // The converter options change which samples there are: part of the samples' identity.
  config.samples_digest = a.samples_source == "egca"
                              ? sd.value()
                              : fmt::format("{}:{}:dataset={}:filter={}:model={}:all={}:raw={}",
                                            a.samples_source, sd.value(), a.dataset, a.run_filter,
                                            a.model, a.all_attempts, a.raw_responses);
  config.constraints = "none";
  if (a.extract_constraints) {
    options.constraint_source = ConstraintSource::kExtract;
    config.constraints = "extract";
  } else if (!a.constraints_file.empty()) {
    auto file = egca::gates::ReadConstraintsFile(a.constraints_file);
    if (!file.ok()) return Fail(kExitUsage, "--constraints: " + file.status().ToString());
    auto cd = Digest(a.constraints_file);
    if (!cd.ok()) return Fail(kExitUsage, cd.status().ToString());
    options.constraint_source = ConstraintSource::kFile;
    options.constraints_file = std::move(file).value();
    config.constraints = "file:" + cd.value();
  }
  config.timeout_seconds = a.timeout;
  config.runtime_error_is_logic = a.runtime_error_is_logic;
  config.check_comparability = !a.no_comparability;
  config.passing_bypasses_gates = a.passing_bypasses_gates;
  config.localize = !a.grade_only;
  config.apps_allclose = a.apps_allclose;
  config.limit = a.limit;
  config.max_program_bytes = a.max_program_bytes;
  config.seed = a.seed;
  config.shard_index = options.shard_index;
  config.shard_count = options.shard_count;
  config.egca_version = EGCA_VERSION;
  config.egca_commit = EGCA_COMMIT;

  auto store = ResultStore::Open(a.store, config);
  if (!store.ok()) return Fail(kExitUsage, store.status().ToString());
  const StoreContents& existing = store.value()->existing();
  if (!existing.samples.empty()) {
    std::cerr << fmt::format("{}: resuming {}: {} samples already done{}\n", kTool, a.store,
                             existing.samples.size(),
                             existing.torn_lines ? " (a torn last line was cut off)" : "");
    if (existing.config.egca_commit != config.egca_commit) {
      std::cerr << fmt::format("{}: note: the store was started by egca commit {}, this is {}\n",
                               kTool, existing.config.egca_commit, config.egca_commit);
    }
  }

  options.workers = a.workers;
  options.router.run.limits.wall_seconds = a.timeout;
  options.router.run.limits.cpu_seconds = a.timeout;
  options.router.runtime_error_is_logic = a.runtime_error_is_logic;
  options.router.grading_trace = grading_trace;  // cost only: routes do not depend on it
  options.router.check_comparability = !a.no_comparability;
  options.router.passing_bypasses_gates = a.passing_bypasses_gates;
  if (a.grade_only) {
    options.router.localize = false;
    options.router.grading_trace = egca::gates::GradingTrace::kNever;  // no trace is wanted
  }
  options.router.run.apps_allclose = a.apps_allclose;
  options.router.divergence.random_seed = a.seed;
  options.limit = a.limit;
  options.max_program_bytes = a.max_program_bytes;
  options.progress.terminal = a.progress == "always"  ? ProgressOptions::Terminal::kAlways
                              : a.progress == "never" ? ProgressOptions::Terminal::kNever
                                                      : ProgressOptions::Terminal::kAuto;
  options.progress.enabled = a.progress != "off";
  options.stop = &g_stop;

  std::vector<BadRecord> bad = problem_report.bad;
  bad.insert(bad.end(), sample_report.bad.begin(), sample_report.bad.end());
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  auto stats = RunBatch(problems.value(), samples.value(), bad, store.value().get(), options);
  if (!stats.ok()) return Fail(kExitUsage, stats.status().ToString());
  store.value().reset();  // flush, release the lock
  const RunStats& s = stats.value();
  std::cerr << fmt::format(
      "{}: {} samples of {} problems ({} done before); wrote {} records ({} programs routed) in "
      "{:.1f} s with {} workers; {} stand-ins, {} without reference, {} failed references, {} "
      "egca errors; {} reference traces computed, {} reused\n",
      kTool, s.samples, s.problems, s.samples_done_before, s.samples_written, s.programs_routed,
      s.wall_seconds, s.workers, s.stand_ins, s.no_reference, s.failed_references, s.errors,
      s.reference_traces, s.reference_trace_hits);
  if (s.interrupted) {
    std::cerr << kTool << ": interrupted; run the same command again to resume\n";
    return kExitFailed;
  }
  int code = WriteAndPrintReport(a.store, a.store, a.title, true);
  if (code != kExitOk) return code;
  return s.errors > 0 ? kExitFailed : kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"egca-batch: failure-mode statistics of a sample set (resumable, shardable)"};
  app.require_subcommand(1);

  RunArgs r;
  CLI::App* run = app.add_subcommand("run", "route every (problem, sample) pair into a store");
  run->add_option("--problems", r.problems, "problems file or APPS folder")->required();
  run->add_option("--format", r.format,
                  "problem format: " + fmt::format("{}", fmt::join(DatasetFormatNames(), ", ")));
  run->add_option("--mapcoder-call-tests", r.mapcoder_call_tests,
                  "MapCoder/TeamCoder APPS problems with starter code: stdio (as MapCoder graded "
                  "them) or call")
      ->check(CLI::IsMember({"stdio", "call"}));
  run->add_option("--field", r.fields,
                  "APPS+ field mapping key=name (keys: id, description, solution, fn_name, inputs, "
                  "outputs, starter_code, difficulty; name may be a dotted path); repeatable");
  run->add_option("--id-prefix", r.id_prefix,
                  "replaces the mbpp/, apps/, apps_plus/ prefix of problem ids");
  run->add_flag("--mbpp-challenge-tests", r.mbpp_challenge_tests,
                "MBPP: add challenge_test_list to the tests");
  run->add_option("--max-problems", r.max_problems, "load at most this many problems");
  run->add_option("--grading-trace", r.grading_trace,
                  "trace tests while grading: auto (default), always, never (cheaper on "
                  "timeout-heavy sets)");
  run->add_option("--samples", r.samples, "samples file")->required();
  run->add_option("--samples-source", r.samples_source,
                  "egca (sample JSONL), or a published file converted on the fly: " +
                      fmt::format("{}", fmt::join(SampleSourceNames(), ", ")));
  run->add_option("--dataset", r.dataset,
                  "converter: only run files under this folder (e.g. APPS)");
  run->add_option("--run-filter", r.run_filter,
                  "converter: only run files whose path contains this");
  run->add_option("--model", r.model, "converter: model name for every sample");
  run->add_flag("--all-attempts", r.all_attempts,
                "converter: every attempt, not only the final program");
  run->add_flag("--raw-responses", r.raw_responses, "converter: raw responses (fences, prose)");
  run->add_option("--store", r.store, "result store directory (created, or resumed)")->required();
  auto* cf = run->add_option("--constraints", r.constraints_file,
                             "constraints file (JSON/JSONL by problem id)");
  run->add_flag("--extract-constraints", r.extract_constraints,
                "extract constraints from each problem's reference")
      ->excludes(cf);
  run->add_option("--workers", r.workers, "parallel workers (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--shard", r.shard, "i/N: only problems with hash(id) mod N == i");
  run->add_option("--timeout", r.timeout, "per-test wall/CPU limit, seconds")
      ->check(CLI::PositiveNumber);
  run->add_option("--limit", r.limit, "route at most this many samples (after the shard filter)");
  run->add_option("--max-program-bytes", r.max_program_bytes, "larger programs are bad records");
  run->add_option("--seed", r.seed, "seed of the random-boundary target");
  run->add_flag("--runtime-error-is-logic", r.runtime_error_is_logic,
                "route run-time errors to LOGIC (appendix D.2)");
  run->add_flag("--no-comparability", r.no_comparability, "skip the I_cmp gate");
  run->add_flag("--apps-allclose", r.apps_allclose,
                "APPS's numeric leniency: integers too compare with the float tolerance "
                "(np.allclose), as APPS's checker; off: integers exactly");
  run->add_flag("--passing-bypasses-gates", r.passing_bypasses_gates,
                "a program that passes every test is CORRECT even if I_C or I_cmp rejects it "
                "(the bypass EGCA section 5 suggests; default: eq. 5, CONSTRAINT)");
  run->add_flag("--grade-only", r.grade_only,
                "route without localizing LOGIC samples (no spans; cheaper: modes and R only)");
  run->add_option("--progress", r.progress, "auto, always, never (log lines only) or off")
      ->check(CLI::IsMember({"auto", "always", "never", "off"}));
  run->add_option("--title", r.title, "report title");

  std::string merge_out, report_store, report_out, report_title;
  std::vector<std::string> merge_inputs;
  CLI::App* merge = app.add_subcommand("merge", "merge shard stores into a new store, and report");
  merge->add_option("out", merge_out, "new store directory")->required();
  merge->add_option("stores", merge_inputs, "shard stores")->required();
  merge->add_option("--title", report_title, "report title");

  CLI::App* rep = app.add_subcommand("report", "write report.json / report.md / report.svg");
  rep->add_option("store", report_store, "store directory")->required();
  rep->add_option("--out", report_out, "output directory (default: the store)");
  rep->add_option("--title", report_title, "report title");
  bool report_views = false;
  uint64_t report_credit_seed = 0;
  rep->add_option("--credit-seed", report_credit_seed,
                  "seed of the credit section's random groups of 8 and 16 (default 0)");
  rep->add_flag("--views", report_views,
                "route the report's examples again and write their pages to OUT/views/, "
                "linked from report.md");

  ShowArgs show_args;
  CLI::App* show = app.add_subcommand(
      "show", "route one stored sample again and print its route and trace view");
  show->add_option("store", show_args.store, "store directory")->required();
  show->add_option("key", show_args.key, "sample key (HEX or HEX#DUP, as report.md lists them)")
      ->required();
  show->add_option("--problem", show_args.problem,
                   "the sample's problem (when the key is "
                   "a sample of several)");
  show->add_option("--html", show_args.html, "also write a self-contained HTML page");
  show->add_flag("--json", show_args.json, "print one JSON document");
  show->add_option("--color", show_args.color, "auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  show->add_option("--steps", show_args.max_steps, "aligned steps shown before the divergence");

  std::string conv_in, conv_source, conv_problems, conv_format = "auto", conv_out;
  ConvertOptions conv;
  CLI::App* convert =
      app.add_subcommand("convert", "convert a published sample file to sample JSONL");
  convert
      ->add_option("--source", conv_source, fmt::format("{}", fmt::join(SampleSourceNames(), ", ")))
      ->required();
  convert->add_option("--in", conv_in, "published file (tarball, folder or JSONL)")->required();
  convert->add_option("--problems", conv_problems, "the problems the samples belong to")
      ->required();
  convert->add_option("--format", conv_format, "problem format");
  convert->add_option("--out", conv_out, "sample JSONL to write")->required();
  convert->add_option("--model", conv.model, "model name for every sample");
  convert->add_option("--dataset", conv.dataset, "only run files under this folder (e.g. APPS)");
  convert->add_option("--run-filter", conv.run_filter, "only run files whose path contains this");
  convert->add_flag("--all-attempts", conv.all_attempts,
                    "every attempt, not only the final program");
  convert->add_flag("--raw-responses", conv.raw_responses, "raw responses (fences, prose)");

  egca_batch_cpp::CppBatchArgs cb;
  CLI::App* cppc = app.add_subcommand(
      "cpp", "grade and route C++ candidates (HumanEval-X, MBXP, MDEVAL) with clang + the sandbox");
  cppc->add_option("--problems", cb.problems, "C++ problem file (humaneval_cpp, mbxp_cpp, mdeval_cpp)")
      ->required();
  cppc->add_option("--format", cb.format, "problem format (auto)");
  cppc->add_option("--samples", cb.samples, "samples file");
  cppc->add_option("--samples-source", cb.samples_source,
                   "jsonl (egca sample JSONL) or a converter: mbxp, ...");
  cppc->add_flag("--references", cb.references, "route every problem's reference solutions");
  cppc->add_flag("--mdeval-buggy", cb.mdeval_buggy,
                 "route MDEVAL's buggy programs (--problems: mdeval_bug_CPP.jsonl)");
  cppc->add_option("--out", cb.out, "output directory (routes.jsonl, summary.json, summary.md)")
      ->required();
  bool cpp_no_localize = false;
  cppc->add_flag("--no-localize", cpp_no_localize, "route only (no tracing of LOGIC candidates)");
  bool cpp_no_comparability = false;
  cppc->add_flag("--no-comparability", cpp_no_comparability, "skip the I_cmp gate (Clang CFGs)");
  cppc->add_option("--threshold", cb.threshold,
                   "I_cmp threshold (default: C++'s calibrated one, docs/cpp.md)")
      ->check(CLI::Range(0.0, 1.0));
  cppc->add_option("--workers", cb.workers, "parallel workers (one sandbox server each)");
  cppc->add_option("--timeout", cb.timeout, "per-test wall/CPU limit, seconds");
  cppc->add_option("--limit", cb.limit, "route at most this many candidates");
  cppc->add_option("--title", cb.title, "summary title");
  if (auto code = egca::tools::ParseArgs(app, argc, argv, kTool)) return *code;
  if (cppc->parsed()) {
    cb.localize = !cpp_no_localize;
    cb.comparability = !cpp_no_comparability;
    return egca_batch_cpp::RunCppBatch(cb);
  }

  if (run->parsed()) return Run(r);
  if (show->parsed()) return Show(show_args);
  if (merge->parsed()) {
    MergeReport mr;
    egca::Status merged = MergeStores(merge_inputs, merge_out, &mr);
    if (!merged.ok()) return Fail(kExitUsage, merged.ToString());
    for (const auto& note : mr.notes) std::cerr << kTool << ": merged " << note << "\n";
    return WriteAndPrintReport(merge_out, merge_out, report_title, true);
  }
  if (rep->parsed()) {
    return WriteAndPrintReport(report_store, report_out.empty() ? report_store : report_out,
                               report_title, true, report_views, report_credit_seed);
  }
  if (convert->parsed()) {
    auto format = ParseDatasetFormat(conv_format);
    if (!format.ok()) return Fail(kExitUsage, "--format: " + format.status().message());
    DatasetOptions dopts;
    dopts.format = format.value();
    LoadReport pr, sr;
    auto problems = LoadProblems(conv_problems, dopts, &pr);
    if (!problems.ok()) return Fail(kExitUsage, problems.status().ToString());
    auto source = ParseSampleSource(conv_source);
    if (!source.ok()) return Fail(kExitUsage, "--source: " + source.status().message());
    auto samples = ConvertSamples(conv_in, source.value(), problems.value(), conv, &sr);
    if (!samples.ok()) return Fail(kExitUsage, samples.status().ToString());
    PrintBad(sr, 50);
    egca::Status written = WriteSamplesJsonl(conv_out, samples.value());
    if (!written.ok()) return Fail(kExitUsage, written.ToString());
    std::cerr << fmt::format(
        "{}: {} source records, {} samples written to {}, {} unmatched, {} bad\n", kTool,
        sr.records, samples->size(), conv_out, sr.unmatched, sr.bad.size());
    return kExitOk;
  }
  return kExitUsage;
}
