// Routes every real program of the shared corpus (CodeT samples, MapCoder / LDB / Reflexion
// programs, HumanEval canonical solutions; bench/cfg's loader) and counts modes, egca
// errors and crashes. A program defining a HumanEval entry point is routed against that
// problem's canonical solution and check(); any other program against itself with no
// tests (the static gates, and LOGIC "no tests"). Unparseable programs must be SYNTAX.
//
//   router_robustness [--max-codet N] [--limit N] [--no-tarballs] [--timeout S] [--workers N]
//
// The corpus is loaded first, then routed by N worker threads (one Executor each, created
// before any thread; the HumanEval problems' ReferenceCache shared). A program routed
// against itself gets a private cache (its reference is used once). Exit 0 only when no
// egca error occurred and every unparseable program was SYNTAX.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "corpus.h"
#include "egca/cfg/extract.h"
#include "egca/core/files.h"
#include "egca/gates/router.h"

namespace {

struct Item {
  std::string origin;
  std::string code;
};

struct Tally {
  std::map<std::string, int64_t> modes;
  int64_t routed = 0, errors = 0, unparseable = 0, unparseable_not_syntax = 0, matched = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"router robustness over the real-program corpus"};
  int64_t max_codet = -1, limit = -1;
  bool no_tarballs = false;
  double timeout = 1;
  int workers = 2;
  app.add_option("--max-codet", max_codet, "CodeT samples to take (-1: all)");
  app.add_option("--limit", limit, "programs to route (-1: all)");
  app.add_flag("--no-tarballs", no_tarballs, "skip MapCoder/LDB/Reflexion");
  app.add_option("--timeout", timeout, "per-test limit, seconds");
  app.add_option("--workers", workers, "worker threads, one executor each (>= 1)");
  CLI11_PARSE(app, argc, argv);
  if (workers < 1) {
    std::cerr << "router_robustness: --workers must be >= 1\n";
    return 2;
  }

  // HumanEval problems by entry point.
  std::map<std::string, egca::gates::Problem> by_entry;
  auto he = egca::ReadMaybeGzipFile(std::string(EGCA_DATA_DIR) + "/humaneval/HumanEval.jsonl.gz");
  if (!he.ok()) {
    std::cerr << "router_robustness: " << he.status().ToString() << "\n";
    return 2;
  }
  std::istringstream in(he.value());
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    egca::gates::Problem p;
    std::string entry = j["entry_point"];
    p.reference = j["prompt"].get<std::string>() + j["canonical_solution"].get<std::string>();
    auto t = egca::tracer::TestCase::HumanEvalCheck(j["test"], entry);
    t.name = "check(" + entry + ")";
    p.tests.push_back(t);
    by_entry.emplace(entry, std::move(p));
  }

  // Every executor before any thread (each fork server forks this process).
  std::vector<std::unique_ptr<egca::tracer::Executor>> executors;
  for (int w = 0; w < workers; ++w) {
    auto executor = egca::tracer::Executor::Create({});
    if (!executor.ok()) {
      std::cerr << "router_robustness: " << executor.status().ToString() << "\n";
      return 1;
    }
    executors.push_back(std::move(executor).value());
  }
  egca::gates::RouterOptions options;
  options.run.limits.wall_seconds = timeout;
  options.run.limits.cpu_seconds = timeout;

  egca::cfg::corpus::Options copts;
  copts.data_dir = EGCA_DATA_DIR;
  copts.max_codet = max_codet;
  copts.tarballs = !no_tarballs;
  egca::cfg::corpus::Stats stats;
  std::vector<Item> items;
  egca::Status st = egca::cfg::corpus::ForEachProgram(
      copts,
      [&](const egca::cfg::corpus::Program& prog) {
        if (limit >= 0 && static_cast<int64_t>(items.size()) >= limit) return;
        items.push_back({prog.origin, prog.completion ? egca::cfg::ExtractProgram(prog.text).code
                                                      : prog.text});
      },
      &stats);
  if (!st.ok()) {
    std::cerr << "router_robustness: " << st.ToString() << "\n";
    return 1;
  }
  std::cerr << fmt::format("{} programs loaded ({} bad records)\n", items.size(),
                           stats.bad_records);

  const std::regex def_re(R"(^def ([A-Za-z_][A-Za-z0-9_]*)\s*\()", std::regex::multiline);
  auto shared_cache = std::make_shared<egca::gates::ReferenceCache>();
  std::atomic<size_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex mu;
  Tally total;
  auto start = std::chrono::steady_clock::now();
  auto work = [&](egca::tracer::Executor* executor) {
    egca::gates::Router he_router(executor, options, shared_cache);
    Tally local;
    for (size_t i = next++; i < items.size(); i = next++) {
      const Item& item = items[i];
      const std::string& code = item.code;
      const egca::gates::Problem* problem = nullptr;
      for (auto it = std::sregex_iterator(code.begin(), code.end(), def_re);
           it != std::sregex_iterator(); ++it) {
        auto found = by_entry.find((*it)[1].str());
        if (found != by_entry.end()) {
          problem = &found->second;
          break;
        }
      }
      auto parsed = egca::cfg::ProgramCfg::CheckSyntax(code);
      bool bad_syntax = parsed.ok() && parsed.value().has_value();
      egca::StatusOr<egca::gates::RouteResult> r = egca::InvalidArgument("not routed");
      if (problem) {
        ++local.matched;
        r = he_router.Route(code, *problem);
      } else {
        egca::gates::Problem self;
        // A reference must parse: an unparseable program gets an empty module as its
        // stand-in reference.
        self.reference = bad_syntax ? std::string("pass\n") : code;
        egca::gates::Router self_router(executor, options);
        r = self_router.Route(code, self);
      }
      ++local.routed;
      if (!r.ok()) {
        ++local.errors;
        std::lock_guard<std::mutex> lock(mu);
        std::cerr << item.origin << ": " << r.status().ToString() << "\n";
      } else {
        ++local.modes[egca::gates::FailureModeName(r->mode)];
        if (bad_syntax) {
          ++local.unparseable;
          if (r->mode != egca::gates::FailureMode::kSyntax) {
            ++local.unparseable_not_syntax;
            std::lock_guard<std::mutex> lock(mu);
            std::cerr << item.origin << ": unparseable but routed "
                      << egca::gates::FailureModeName(r->mode) << "\n";
          }
        }
      }
      int64_t n = ++done;
      if (n % 5000 == 0) {
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::lock_guard<std::mutex> lock(mu);
        std::cerr << fmt::format("{} programs routed, {:.0f} s\n", n, s);
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [k, v] : local.modes) total.modes[k] += v;
    total.routed += local.routed;
    total.errors += local.errors;
    total.unparseable += local.unparseable;
    total.unparseable_not_syntax += local.unparseable_not_syntax;
    total.matched += local.matched;
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < executors.size(); ++w) threads.emplace_back(work, executors[w].get());
  work(executors[0].get());
  for (std::thread& t : threads) t.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::string m;
  for (const auto& [k, v] : total.modes) m += fmt::format(" {}={}", k, v);
  fmt::print("programs routed={} (HumanEval-matched {}) bad_records={} egca_errors={}\n",
             total.routed, total.matched, stats.bad_records, total.errors);
  fmt::print("modes:{}\n", m);
  fmt::print("unparseable={} of which not SYNTAX={}\n", total.unparseable,
             total.unparseable_not_syntax);
  fmt::print("wall {:.1f} s with {} workers, {:.1f} ms per program per worker\n", seconds, workers,
             total.routed ? 1000 * seconds * workers / total.routed : 0.0);
  return total.errors == 0 && total.unparseable_not_syntax == 0 ? 0 : 1;
}
