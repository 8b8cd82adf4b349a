// The cost of a full router pass (grading + tracing + localization) against plain test
// grading of the same samples, in the same run:
//
//   router_throughput [--humaneval-samples K] [--workers N] [--timeout S] [--no-quixbugs]
//                     [--repeats R] [--costliest N] [--grading-retrace on|off]
//
// Samples: the first K CodeT (CodeGen-16B) samples of every HumanEval problem against the
// canonical solution (one test: check), and the 40 QuixBugs buggy programs against their
// fixes (the asserts as tests). Passes, each over all samples, with W = 1 and W = N worker
// threads (one Executor each, created before any thread; one ReferenceCache shared):
//   plain   Executor::RunAll, untraced (the baseline), before and after every routed pass
//   before  the router as it was: grading untraced, the failing test re-run traced, full
//           reference traces (grading_trace = never, trim_reference_trace = off)
//   cold    the router's defaults, empty ReferenceCache
//   warm    the same again with the cache the cold pass filled (reference traces from a
//           previous epoch, as in multi-epoch training); R times
// A routed pass's ratio is against the mean of the plain passes on either side of it (the
// load of a shared machine drifts). Per pass: wall seconds, samples/s, ratio, modes, and
// per-stage sums (grading, reference traces, candidate re-runs, alignment) with
// milliseconds per LOGIC sample. --costliest N lists where the first warm pass spent most,
// per mode and per sample, against the plain pass after it. --grading-retrace off traces
// the graded runs themselves (RouterOptions::grading_retrace), for comparison.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "egca/core/files.h"
#include "egca/gates/router.h"

namespace {

using egca::gates::FailureMode;
using json = nlohmann::json;

struct Sample {
  std::string candidate;
  const egca::gates::Problem* problem = nullptr;
};

struct PassStats {
  double wall = 0;
  int routed = 0, errors = 0, logic = 0, from_grading = 0, traced_tests = 0, retried = 0;
  double grade = 0, reference = 0, candidate_trace = 0, prepare = 0, diff = 0, localize = 0;
  // Route time outside grading and localization: parsing, constraints, comparability.
  double static_checks = 0;
  std::map<std::string, int> modes;
  size_t reference_traces = 0;
  // Per sample: mode and the earliest / last divergence and error spans (agreement check).
  std::vector<std::string> routes;
  // Per sample: router seconds (grading + localization) and the candidate trace's events.
  std::vector<double> seconds;
  std::vector<int> events;
  std::vector<std::string> breakdown;
};

std::string RouteKey(const egca::gates::RouteResult& r) {
  auto span = [](const std::optional<egca::SourceSpan>& s) {
    return s ? s->ToString() : std::string("-");
  };
  return fmt::format("{} {} {} {}", egca::gates::FailureModeName(r.mode),
                     span(r.earliest_divergence), span(r.last_divergence), span(r.error_span));
}

// Samples whose mode and spans agree between two passes; LOGIC samples whose earliest
// divergence agrees.
std::string Agreement(const PassStats& a, const PassStats& b) {
  int same = 0, logic = 0, logic_same = 0;
  for (size_t i = 0; i < a.routes.size() && i < b.routes.size(); ++i) {
    same += a.routes[i] == b.routes[i];
    if (a.routes[i].rfind("LOGIC ", 0) == 0) {
      ++logic;
      auto earliest = [](const std::string& k) {
        size_t s1 = k.find(' '), s2 = k.find(' ', s1 + 1);
        return k.substr(0, s2);
      };
      logic_same += earliest(a.routes[i]) == earliest(b.routes[i]);
    }
  }
  std::string out = fmt::format("{}/{} routes identical (mode + spans), LOGIC earliest span {}/{}",
                                same, a.routes.size(), logic_same, logic);
  int shown = 0;
  for (size_t i = 0; i < a.routes.size() && i < b.routes.size() && shown < 5; ++i) {
    if (a.routes[i] == b.routes[i]) continue;
    out += fmt::format("\n  #{}: {}  vs  {}", i, a.routes[i], b.routes[i]);
    ++shown;
  }
  return out;
}

enum class Pass { kPlain, kBefore, kCold, kWarm };

PassStats RunPass(Pass pass, const std::vector<Sample>& samples,
                  const std::vector<egca::tracer::Executor*>& executors,
                  const egca::gates::RouterOptions& base,
                  std::shared_ptr<egca::gates::ReferenceCache> cache) {
  egca::gates::RouterOptions options = base;
  if (pass == Pass::kBefore) {
    options.grading_trace = egca::gates::GradingTrace::kNever;
    options.trim_reference_trace = false;
  }
  PassStats stats;
  stats.routes.resize(samples.size());
  stats.seconds.resize(samples.size());
  stats.events.resize(samples.size());
  stats.breakdown.resize(samples.size());
  std::mutex mu;
  std::atomic<size_t> next{0};
  auto work = [&](egca::tracer::Executor* executor) {
    egca::gates::Router router(executor, options, cache);
    PassStats local;
    for (size_t i = next++; i < samples.size(); i = next++) {
      const Sample& s = samples[i];
      if (pass == Pass::kPlain) {
        auto t0 = std::chrono::steady_clock::now();
        auto r = executor->RunAll(s.candidate, s.problem->tests, options.run);
        stats.seconds[i] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++local.routed;
        local.errors += !r.ok();
        continue;
      }
      auto t0 = std::chrono::steady_clock::now();
      auto r = router.Route(s.candidate, *s.problem);
      const double routed_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ++local.routed;
      if (!r.ok()) {
        ++local.errors;
        continue;
      }
      ++local.modes[egca::gates::FailureModeName(r->mode)];
      stats.routes[i] = RouteKey(*r);  // one writer per index
      stats.seconds[i] = routed_seconds;
      local.static_checks += routed_seconds - r->grade_seconds - r->localize_seconds;
      stats.events[i] = r->candidate_trace ? r->candidate_trace->events_size() : 0;
      stats.breakdown[i] = fmt::format(
          "grade {:.2f} prepare {:.2f} rerun {:.2f} ref {:.2f} diff {:.2f} ref_events {}",
          1000 * r->grade_seconds, 1000 * r->prepare_seconds, 1000 * r->candidate_trace_seconds,
          1000 * r->reference_trace_seconds, 1000 * r->diff_seconds,
          r->reference_trace ? r->reference_trace->events_size() : 0);
      local.grade += r->grade_seconds;
      local.reference += r->reference_trace_seconds;
      local.candidate_trace += r->candidate_trace_seconds;
      local.prepare += r->prepare_seconds;
      local.diff += r->diff_seconds;
      local.traced_tests += r->grading_traced_tests;
      local.retried += r->grading_retried_tests;
      if (r->mode == FailureMode::kLogic) {
        ++local.logic;
        local.localize += r->localize_seconds;
        local.from_grading += r->trace_from_grading;
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    stats.routed += local.routed;
    stats.errors += local.errors;
    stats.logic += local.logic;
    stats.from_grading += local.from_grading;
    stats.traced_tests += local.traced_tests;
    stats.retried += local.retried;
    stats.grade += local.grade;
    stats.reference += local.reference;
    stats.candidate_trace += local.candidate_trace;
    stats.prepare += local.prepare;
    stats.diff += local.diff;
    stats.static_checks += local.static_checks;
    stats.localize += local.localize;
    for (const auto& [m, c] : local.modes) stats.modes[m] += c;
  };
  size_t misses_before = cache ? cache->trace_misses() : 0;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (size_t w = 1; w < executors.size(); ++w) threads.emplace_back(work, executors[w]);
  work(executors[0]);
  for (std::thread& t : threads) t.join();
  stats.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (cache) stats.reference_traces = cache->trace_misses() - misses_before;
  return stats;
}

const char* PassName(Pass p) {
  switch (p) {
    case Pass::kPlain:
      return "plain";
    case Pass::kBefore:
      return "before";
    case Pass::kCold:
      return "cold";
    case Pass::kWarm:
      return "warm";
  }
  return "?";
}

std::string LoadAverage() {
  auto text = egca::ReadFile("/proc/loadavg");
  if (!text.ok()) return "?";
  std::string s = text.value();
  size_t third = 0;
  for (int i = 0; i < 3 && third != std::string::npos; ++i) third = s.find(' ', third + 1);
  return s.substr(0, third);
}

// Sample indices 0..values.size()-1, largest value first.
std::vector<size_t> LargestFirst(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] > values[b]; });
  return order;
}

// The `top` samples the warm pass spent most on, with their mode and trace length.
void PrintCostliest(const PassStats& warm, const PassStats& plain, size_t top) {
  const std::vector<size_t> order = LargestFirst(warm.seconds);
  double total = 0;
  for (double s : warm.seconds) total += s;
  fmt::print("warm pass, costliest samples (of {:.3f} s routed):\n", total);
  std::map<std::string, std::array<double, 3>> by_mode;  // count, router s, plain s
  for (size_t i = 0; i < warm.seconds.size(); ++i) {
    auto& m = by_mode[warm.routes[i].substr(0, warm.routes[i].find(' '))];
    m[0] += 1;
    m[1] += warm.seconds[i];
    m[2] += plain.seconds[i];
  }
  for (const auto& [mode, m] : by_mode) {
    fmt::print("  {:<10} {:>4} samples: router {:.3f} s, plain {:.3f} s\n", mode, m[0], m[1],
               m[2]);
  }
  for (size_t k = 0; k < top && k < order.size(); ++k) {
    size_t i = order[k];
    fmt::print("  #{:<4} {:>8.2f} ms (plain {:>8.2f} ms) {:>7} events  {}\n", i,
               1000 * warm.seconds[i], 1000 * plain.seconds[i], warm.events[i],
               warm.routes[i].substr(0, warm.routes[i].find(' ')) + "  " + warm.breakdown[i]);
  }
}

void Section(const std::string& title, const std::vector<Sample>& samples,
             const std::vector<egca::tracer::Executor*>& executors,
             const egca::gates::RouterOptions& options, size_t costliest, int repeats) {
  fmt::print("\n## {}: {} samples, {} worker(s), load {}\n", title, samples.size(),
             executors.size(), LoadAverage());
  fmt::print("{:<7} {:>8} {:>9} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>9} {:>6}  {}\n",
             "pass", "wall_s", "samples/s", "ratio", "grade_s", "static_s", "ref_s", "rerun_s", "diff_s",
             "ms/LOGIC", "inline", "ref_trcs", "errors", "modes");
  // Every routed pass is compared with the plain passes just before and after it (the
  // load of a shared machine drifts over a section); `repeats` warm passes.
  std::vector<std::pair<Pass, PassStats>> passes;
  auto plain_pass = [&] {
    passes.emplace_back(Pass::kPlain, RunPass(Pass::kPlain, samples, executors, options, nullptr));
  };
  plain_pass();
  passes.emplace_back(Pass::kBefore, RunPass(Pass::kBefore, samples, executors, options,
                                             std::make_shared<egca::gates::ReferenceCache>()));
  plain_pass();
  auto cache = std::make_shared<egca::gates::ReferenceCache>();
  passes.emplace_back(Pass::kCold, RunPass(Pass::kCold, samples, executors, options, cache));
  plain_pass();
  for (int r = 0; r < std::max(1, repeats); ++r) {
    passes.emplace_back(Pass::kWarm, RunPass(Pass::kWarm, samples, executors, options, cache));
    plain_pass();
  }
  std::map<Pass, std::vector<double>> ratios;
  for (size_t i = 0; i < passes.size(); ++i) {
    const auto& [p, s] = passes[i];
    double plain = s.wall;
    if (p != Pass::kPlain) {
      plain = (passes[i - 1].second.wall + passes[i + 1].second.wall) / 2;
      ratios[p].push_back(s.wall / plain);
    }
    std::string modes;
    for (const auto& [m, c] : s.modes) modes += fmt::format(" {}={}", m, c);
    bool routed = p != Pass::kPlain;
    fmt::print("{:<7} {:>8.3f} {:>9.1f} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>9} {:>6} {}\n",
               PassName(p), s.wall, s.wall > 0 ? s.routed / s.wall : 0.0,
               routed ? fmt::format("{:.3f}x", s.wall / plain) : "-",
               routed ? fmt::format("{:.3f}", s.grade) : "-",
               routed ? fmt::format("{:.3f}", s.static_checks) : "-",
               routed ? fmt::format("{:.3f}", s.reference) : "-",
               routed ? fmt::format("{:.3f}", s.candidate_trace) : "-",
               routed ? fmt::format("{:.3f}", s.diff) : "-",
               routed && s.logic ? fmt::format("{:.1f}", 1000 * s.localize / s.logic) : "-",
               routed ? fmt::format("{}/{}", s.from_grading, s.logic) : "-",
               routed ? std::to_string(s.reference_traces) : "-", s.errors, modes);
  }
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
  };
  fmt::print("ratio vs the neighbouring plain passes: before {:.3f}x, cold {:.3f}x, warm {:.3f}x",
             mean(ratios[Pass::kBefore]), mean(ratios[Pass::kCold]), mean(ratios[Pass::kWarm]));
  if (ratios[Pass::kWarm].size() > 1) {
    auto [lo, hi] = std::minmax_element(ratios[Pass::kWarm].begin(), ratios[Pass::kWarm].end());
    fmt::print(" (warm {:.3f}-{:.3f} over {} passes)", *lo, *hi, ratios[Pass::kWarm].size());
  }
  fmt::print("\n");
  const PassStats& before = passes[1].second;
  const PassStats& cold = passes[3].second;
  const PassStats& warm = passes[5].second;
  const PassStats& plain_after_warm = passes[6].second;
  fmt::print("cold pass: {} tests traced in grading, {} re-run untraced\n", cold.traced_tests,
             cold.retried);
  fmt::print("before vs cold: {}\ncold vs warm: {}\n", Agreement(before, cold),
             Agreement(cold, warm));
  if (costliest > 0) {
    PrintCostliest(warm, plain_after_warm, costliest);
    // What the cold pass paid that the warm one did not, per sample.
    std::vector<double> extra(cold.seconds.size());
    for (size_t i = 0; i < extra.size(); ++i) extra[i] = cold.seconds[i] - warm.seconds[i];
    const std::vector<size_t> order = LargestFirst(extra);
    fmt::print("cold minus warm, largest:\n");
    for (size_t k = 0; k < costliest && k < order.size(); ++k) {
      size_t i = order[k];
      fmt::print("  #{:<4} {:>+8.2f} ms  cold: {}\n", i, 1000 * extra[i], cold.breakdown[i]);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"router cost against plain grading of the same samples"};
  int humaneval_samples = 10, workers = 2;
  double timeout = 1.0;
  bool no_quixbugs = false;
  app.add_option("--humaneval-samples", humaneval_samples, "CodeT samples per HumanEval problem");
  app.add_option("--workers", workers, "worker threads of the parallel sections (>= 1)");
  app.add_option("--timeout", timeout, "per-test wall/CPU limit, seconds");
  app.add_flag("--no-quixbugs", no_quixbugs, "skip the QuixBugs section");
  size_t costliest = 0;
  int repeats = 1;
  app.add_option("--repeats", repeats, "warm passes per section (each between plain passes)");
  app.add_option("--costliest", costliest, "list the N samples the warm pass spent most on");
  std::string grading_retrace = "on";
  app.add_option("--grading-retrace", grading_retrace,
                 "on: a failing graded test runs again traced (the default); off: the graded "
                 "run itself is traced")
      ->check(CLI::IsMember({"on", "off"}));
  CLI11_PARSE(app, argc, argv);
  if (workers < 1) {
    std::cerr << "router_throughput: --workers must be >= 1\n";
    return 2;
  }

  // Every executor is created before any thread starts (each fork server forks this process).
  std::vector<std::unique_ptr<egca::tracer::Executor>> owned;
  for (int w = 0; w < workers; ++w) {
    auto e = egca::tracer::Executor::Create({});
    if (!e.ok()) {
      std::cerr << "router_throughput: " << e.status().ToString() << "\n";
      return 1;
    }
    owned.push_back(std::move(e).value());
  }
  std::vector<egca::tracer::Executor*> one = {owned[0].get()}, all;
  for (auto& e : owned) all.push_back(e.get());

  egca::gates::RouterOptions options;
  options.run.limits.wall_seconds = timeout;
  options.run.limits.cpu_seconds = timeout;
  options.grading_retrace = grading_retrace == "on";

  // HumanEval: CodeT records are not in HumanEval's order and their prompts lack the
  // doctests; match them by the entry point their prompt defines.
  auto he = egca::ReadMaybeGzipFile(std::string(EGCA_DATA_DIR) + "/humaneval/HumanEval.jsonl.gz");
  auto ct = egca::ReadMaybeGzipFile(
      std::string(EGCA_DATA_DIR) +
      "/samples/codet/HumanEval_codegen16B_temp0.8_topp0.95_num100.jsonl.gz");
  if (!he.ok() || !ct.ok()) {
    std::cerr << "router_throughput: " << (!he.ok() ? he.status() : ct.status()).ToString()
              << "\n";
    return 2;
  }
  std::map<std::string, egca::gates::Problem> by_entry;
  std::istringstream hs(he.value()), cs(ct.value());
  for (std::string line; std::getline(hs, line);) {
    json p = json::parse(line, nullptr, false);
    if (p.is_discarded()) continue;
    egca::gates::Problem problem;
    problem.reference = p["prompt"].get<std::string>() + p["canonical_solution"].get<std::string>();
    problem.tests.push_back(egca::tracer::TestCase::HumanEvalCheck(
        p["test"], p["entry_point"], p["prompt"].get<std::string>()));
    by_entry.emplace(p["entry_point"].get<std::string>(), std::move(problem));
  }
  std::vector<Sample> humaneval;
  for (std::string line; std::getline(cs, line);) {
    json rec = json::parse(line, nullptr, false);
    if (rec.is_discarded()) continue;
    std::string prompt = rec["prompt"];
    const egca::gates::Problem* found = nullptr;
    for (const auto& [entry, problem] : by_entry) {
      if (prompt.find("def " + entry + "(") != std::string::npos) found = &problem;
    }
    if (found == nullptr) continue;
    for (int k = 0; k < humaneval_samples && k < static_cast<int>(rec["samples"].size()); ++k) {
      humaneval.push_back({prompt + rec["samples"][k].get<std::string>(), found});
    }
  }

  std::vector<egca::gates::Problem> quix_problems;
  std::vector<Sample> quixbugs;
  if (!no_quixbugs) {
    auto qb = egca::ReadFile(std::string(EGCA_DATA_DIR) + "/quixbugs/quixbugs_python.jsonl");
    if (!qb.ok()) {
      std::cerr << "router_throughput: " << qb.status().ToString() << "\n";
      return 2;
    }
    std::istringstream qs(qb.value());
    std::vector<std::string> candidates;
    for (std::string line; std::getline(qs, line);) {
      json rec = json::parse(line, nullptr, false);
      if (rec.is_discarded() || !rec.contains("buggy_program")) continue;
      egca::gates::Problem p;
      p.reference = rec["solution"];
      p.tests = egca::tracer::TestsFromScript(rec.value("tests", ""), "");
      quix_problems.push_back(std::move(p));
      candidates.push_back(rec["buggy_program"]);
    }
    for (size_t i = 0; i < candidates.size(); ++i) {
      quixbugs.push_back({candidates[i], &quix_problems[i]});
    }
  }

  fmt::print("# router_throughput: per-test limit {} s, {} HumanEval samples per problem\n",
             timeout, humaneval_samples);
  Section(fmt::format("HumanEval CodeT x{}", humaneval_samples), humaneval, one, options, costliest, repeats);
  if (workers > 1) {
    Section(fmt::format("HumanEval CodeT x{}", humaneval_samples), humaneval, all, options, costliest, repeats);
  }
  if (!quixbugs.empty()) Section("QuixBugs", quixbugs, one, options, costliest, repeats);
  return 0;
}
