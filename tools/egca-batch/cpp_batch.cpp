#include "cpp_batch.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "egca/core/files.h"
#include "egca/cpp/router.h"
#include "egca/datasets/datasets.h"
#include "egca/datasets/samples.h"

namespace egca_batch_cpp {
namespace {

using namespace egca;
using namespace egca::datasets;
using json = nlohmann::json;

constexpr const char* kTool = "egca-batch cpp";

int Usage(const std::string& line) {
  std::cerr << kTool << ": " << line << "\n";
  return 2;
}

struct Job {
  const ProblemRecord* problem = nullptr;
  std::string program;
  std::string label;   // "reference", sample origin, "buggy"
  std::string model;
  std::vector<int32_t> buggy_lines;
};

}  // namespace

int RunCppBatch(const CppBatchArgs& a) {
  if (a.workers < 1) return Usage("--workers: must be >= 1");
  if (a.timeout <= 0) return Usage("--timeout: must be > 0");
  if (!a.references && !a.mdeval_buggy && a.samples.empty()) {
    return Usage("give --samples FILE, --references or --mdeval-buggy");
  }
  auto format = ParseDatasetFormat(a.format);
  if (!format.ok()) return Usage("--format: " + format.status().message());
  DatasetOptions dopts;
  dopts.format = format.value();
  LoadReport preport;
  std::vector<ProblemRecord> problems;
  std::vector<BugRecord> bugs;
  if (a.mdeval_buggy) {
    auto loaded = LoadMdevalBugs(a.problems, &preport);
    if (!loaded.ok()) return Usage("--problems: " + loaded.status().ToString());
    bugs = std::move(loaded).value();
    for (const BugRecord& b : bugs) problems.push_back(b.problem);
  } else {
    auto loaded = LoadProblems(a.problems, dopts, &preport);
    if (!loaded.ok()) return Usage("--problems: " + loaded.status().ToString());
    problems = std::move(loaded).value();
  }
  for (const BadRecord& b : preport.bad) std::cerr << kTool << ": bad record " << b.ToString() << "\n";
  for (const ProblemRecord& p : problems) {
    if (p.language != "cpp") {
      return Usage(fmt::format("--problems {}: problem {} is not C++ (language {})", a.problems,
                               p.id, p.language));
    }
  }
  std::map<std::string, const ProblemRecord*> by_id;
  for (const ProblemRecord& p : problems) by_id[p.id] = &p;

  std::vector<Job> jobs;
  if (a.references) {
    for (const ProblemRecord& p : problems) {
      for (const std::string& ref : p.references) {
        jobs.push_back({&p, ref, "reference", "reference", {}});
      }
    }
  } else if (a.mdeval_buggy) {
    for (size_t i = 0; i < bugs.size(); ++i) {
      jobs.push_back({&problems[i], bugs[i].buggy_code, "buggy:" + bugs[i].category, "mdeval",
                      bugs[i].buggy_lines});
    }
  } else {
    LoadReport sreport;
    StatusOr<std::vector<Sample>> samples = InvalidArgument("");
    if (a.samples_source == "jsonl") {
      samples = LoadSamples(a.samples, &sreport);
    } else {
      auto source = ParseSampleSource(a.samples_source);
      if (!source.ok()) return Usage("--samples-source: " + source.status().message());
      samples = ConvertSamples(a.samples, source.value(), problems, {}, &sreport);
    }
    if (!samples.ok()) return Usage("--samples: " + samples.status().ToString());
    for (const BadRecord& b : sreport.bad) std::cerr << kTool << ": bad sample " << b.ToString() << "\n";
    for (const Sample& s : samples.value()) {
      auto it = by_id.find(s.problem_id);
      if (it == by_id.end()) {
        std::cerr << kTool << ": " << s.origin << ": unknown problem " << s.problem_id << "\n";
        continue;
      }
      SampleProgram program = ProgramOf(s, *it->second);
      jobs.push_back({it->second, program.code, s.origin, s.model, {}});
    }
  }
  if (a.limit >= 0 && static_cast<int64_t>(jobs.size()) > a.limit) jobs.resize(a.limit);

  std::error_code ec;
  std::filesystem::create_directories(a.out, ec);
  if (ec) return Usage(fmt::format("--out {}: {}", a.out, ec.message()));

  // Each executor starts egca-cpp-server (exec mode): no candidate sees this process's
  // memory, and creating them needs no care about threads.
  std::vector<std::unique_ptr<cpp::CppExecutor>> executors;
  for (int w = 0; w < a.workers; ++w) {
    auto ex = cpp::CppExecutor::Create({});
    if (!ex.ok()) {
      std::cerr << kTool << ": " << ex.status().ToString() << "\n";
      return 1;
    }
    executors.push_back(std::move(ex).value());
  }
  if (!executors.empty()) {
    Status pch = executors.front()->compiler().PreparePch();
    if (!pch.ok()) {
      std::cerr << kTool << ": " << pch.ToString() << "\n";
      return 1;
    }
  }
  cpp::CppRouterOptions ropts;
  ropts.run.limits.wall_seconds = a.timeout;
  ropts.run.limits.cpu_seconds = a.timeout;
  ropts.localize = a.localize;
  ropts.check_comparability = a.comparability;
  if (a.threshold >= 0) ropts.structure.threshold = a.threshold;

  std::vector<std::optional<cpp::CppRouteResult>> results(jobs.size());
  std::vector<std::string> errors(jobs.size());
  std::atomic<size_t> next{0}, done{0};
  std::mutex log_mu;
  const auto start = std::chrono::steady_clock::now();
  auto worker = [&](int w) {
    cpp::CppRouter router(executors[w].get(), ropts);
    while (true) {
      size_t i = next.fetch_add(1);
      if (i >= jobs.size()) return;
      gates::Problem p;
      p.tests = jobs[i].problem->tests;
      if (!jobs[i].problem->references.empty()) p.reference = jobs[i].problem->references[0];
      auto routed = router.Route(jobs[i].program, p);
      if (routed.ok()) {
        results[i] = std::move(routed).value();
      } else {
        errors[i] = routed.status().ToString();
      }
      size_t n = ++done;
      if (n % 50 == 0 || n == jobs.size()) {
        std::lock_guard<std::mutex> lock(log_mu);
        std::cerr << fmt::format("{}: {}/{} routed\n", kTool, n, jobs.size());
      }
    }
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < a.workers; ++w) threads.emplace_back(worker, w);
  for (auto& t : threads) t.join();
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::map<std::string, int64_t> modes, verdicts;
  int64_t egca_errors = 0;
  int64_t localized = 0, earliest_hits = 0, last_hits = 0, random_hits = 0;
  double compile_seconds = 0;
  std::string lines;
  json not_correct = json::array();
  for (size_t i = 0; i < jobs.size(); ++i) {
    json rec;
    rec["problem_id"] = jobs[i].problem->id;
    rec["candidate"] = jobs[i].label;
    rec["model"] = jobs[i].model;
    if (!jobs[i].buggy_lines.empty()) rec["buggy_lines"] = jobs[i].buggy_lines;
    if (!results[i]) {
      ++egca_errors;
      rec["error"] = errors[i];
      lines += rec.dump() + "\n";
      continue;
    }
    const gates::RouteResult& r = results[i]->route;
    const auto& loc = results[i]->localization;
    const std::string mode = gates::FailureModeName(r.mode);
    ++modes[mode];
    rec["mode"] = mode;
    rec["reason"] = r.reason;
    rec["R_hat"] = r.pass_fraction;
    rec["grade_seconds"] = r.grade_seconds;
    json tests = json::array();
    for (const tracer::TestResult& t : r.grading.tests) {
      const sandbox::Verdict& v = t.verdict;
      ++verdicts[sandbox::VerdictName(v.kind)];
      json jt = {{"verdict", sandbox::VerdictName(v.kind)}};
      if (!v.error_type.empty()) jt["error_type"] = v.error_type;
      if (!v.message.empty()) jt["message"] = v.message;
      if (!v.detail.empty()) jt["detail"] = v.detail;
      if (v.line > 0) jt["line"] = v.line;
      jt["wall_seconds"] = v.wall_seconds;
      tests.push_back(jt);
    }
    rec["tests"] = tests;
    if (r.comparability) {
      rec["similarity"] = r.comparability->score;
      rec["comparable"] = r.comparability->comparable;
    }
    if (r.error_span) rec["error_span"] = r.error_span->ToString();
    if (!r.localization_note.empty()) rec["localization_note"] = r.localization_note;
    if (loc) {
      auto div = [](const cpp::CppDivergence& d) {
        return json{{"kind", cpp::DivergenceKindName(d.kind)}, {"line", d.line},
                    {"event", d.event}, {"why", d.why}};
      };
      rec["earliest"] = div(loc->earliest);
      rec["last"] = div(loc->last);
      rec["random_line"] = loc->random_line;
      rec["trace_seconds"] = results[i]->trace_seconds;
      if (!jobs[i].buggy_lines.empty() && r.mode == gates::FailureMode::kLogic) {
        auto hit = [&](int32_t line) {
          for (int32_t b : jobs[i].buggy_lines) {
            if (b == line) return true;
          }
          return false;
        };
        rec["earliest_hit"] = hit(loc->earliest.line);
        rec["last_hit"] = hit(loc->last.line);
        rec["random_hit"] = hit(loc->random_line);
        ++localized;
        earliest_hits += hit(loc->earliest.line) ? 1 : 0;
        last_hits += hit(loc->last.line) ? 1 : 0;
        random_hits += hit(loc->random_line) ? 1 : 0;
      }
    }
    if (!r.error_message.empty()) rec["error_message"] = r.error_message;
    if (r.mode != gates::FailureMode::kCorrect && a.references) {
      not_correct.push_back({{"problem_id", jobs[i].problem->id}, {"mode", mode},
                             {"reason", r.reason}, {"error", r.error_message}});
    }
    lines += rec.dump() + "\n";
  }
  (void)compile_seconds;
  Status w1 = WriteFileAtomic(a.out + "/routes.jsonl", lines);
  json summary = {{"title", a.title},
                  {"problems_file", a.problems},
                  {"samples_file", a.samples},
                  {"candidates", jobs.size()},
                  {"modes", modes},
                  {"verdicts", verdicts},
                  {"egca_errors", egca_errors},
                  {"workers", a.workers},
                  {"wall_seconds", wall}};
  if (a.references) summary["references_not_correct"] = not_correct;
  if (a.mdeval_buggy) {
    summary["logic_localized"] = localized;
    summary["earliest_hits"] = earliest_hits;
    summary["last_hits"] = last_hits;
    summary["random_hits"] = random_hits;
  }
  Status w2 = WriteFileAtomic(a.out + "/summary.json", summary.dump(2) + "\n");
  std::string md = fmt::format("# {}\n\n{} candidates, {} workers, {:.0f} s wall.\n\n| route | count | share |\n|---|---|---|\n",
                               a.title, jobs.size(), a.workers, wall);
  for (const char* m : {"CORRECT", "LOGIC", "SYNTAX", "CONSTRAINT"}) {
    int64_t n = modes.count(m) ? modes[m] : 0;
    md += fmt::format("| {} | {} | {:.1f}% |\n", m, n,
                      jobs.empty() ? 0.0 : 100.0 * double(n) / double(jobs.size()));
  }
  md += "\n| verdict (per test) | count |\n|---|---|\n";
  for (const auto& [k, n] : verdicts) md += fmt::format("| {} | {} |\n", k, n);
  if (a.mdeval_buggy && localized > 0) {
    auto pct = [&](int64_t n) { return 100.0 * double(n) / double(localized); };
    md += fmt::format(
        "\nLOGIC cases localized: {}. Blamed line is a true buggy line (fragment_lines):\n\n"
        "| target | hits | share |\n|---|---|---|\n| earliest divergence | {} | {:.1f}% |\n"
        "| last divergence | {} | {:.1f}% |\n| random executed statement | {} | {:.1f}% |\n",
        localized, earliest_hits, pct(earliest_hits), last_hits, pct(last_hits), random_hits,
        pct(random_hits));
  }
  if (egca_errors > 0) md += fmt::format("\negca errors: {}\n", egca_errors);
  Status w3 = WriteFileAtomic(a.out + "/summary.md", md);
  for (const Status* s : {&w1, &w2, &w3}) {
    if (!s->ok()) return Usage(s->ToString());
  }
  std::cout << md;
  return egca_errors > 0 ? 1 : 0;
}

}  // namespace egca_batch_cpp
