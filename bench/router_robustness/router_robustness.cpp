// Routes every real program of the shared corpus (CodeT samples, MapCoder / LDB / Reflexion
// programs, HumanEval canonical solutions; bench/cfg's loader) and counts modes, egca
// errors and crashes. A program defining a HumanEval entry point is routed against that
// problem's canonical solution and check(); any other program against itself with no
// tests (the static gates, and LOGIC "no tests"). Unparseable programs must be SYNTAX.
//
//   router_robustness [--max-codet N] [--limit N] [--no-tarballs] [--timeout S]
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "corpus.h"
#include "egca/cfg/extract.h"
#include "egca/core/files.h"
#include "egca/gates/router.h"

int main(int argc, char** argv) {
  CLI::App app{"router robustness over the real-program corpus"};
  int64_t max_codet = -1, limit = -1;
  bool no_tarballs = false;
  double timeout = 2;
  app.add_option("--max-codet", max_codet, "CodeT samples to take (-1: all)");
  app.add_option("--limit", limit, "programs to route (-1: all)");
  app.add_flag("--no-tarballs", no_tarballs, "skip MapCoder/LDB/Reflexion");
  app.add_option("--timeout", timeout, "per-test limit, seconds");
  CLI11_PARSE(app, argc, argv);

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

  auto executor = egca::tracer::Executor::Create({});
  if (!executor.ok()) {
    std::cerr << "router_robustness: " << executor.status().ToString() << "\n";
    return 1;
  }
  egca::gates::RouterOptions options;
  options.run.limits.wall_seconds = timeout;
  options.run.limits.cpu_seconds = timeout;
  egca::gates::Router router(executor.value().get(), options);

  egca::cfg::corpus::Options copts;
  copts.data_dir = EGCA_DATA_DIR;
  copts.max_codet = max_codet;
  copts.tarballs = !no_tarballs;
  egca::cfg::corpus::Stats stats;
  std::map<std::string, int64_t> modes;
  int64_t routed = 0, errors = 0, unparseable = 0, unparseable_not_syntax = 0, matched = 0;
  double seconds = 0;
  std::regex def_re(R"(^def ([A-Za-z_][A-Za-z0-9_]*)\s*\()", std::regex::multiline);
  auto start = std::chrono::steady_clock::now();
  egca::Status st = egca::cfg::corpus::ForEachProgram(
      copts,
      [&](const egca::cfg::corpus::Program& prog) {
        if (limit >= 0 && routed >= limit) return;
        std::string code = prog.completion ? egca::cfg::ExtractProgram(prog.text).code : prog.text;
        egca::gates::Problem self;
        const egca::gates::Problem* problem = nullptr;
        for (auto it = std::sregex_iterator(code.begin(), code.end(), def_re);
             it != std::sregex_iterator(); ++it) {
          auto found = by_entry.find((*it)[1].str());
          if (found != by_entry.end()) {
            problem = &found->second;
            break;
          }
        }
        if (problem) {
          ++matched;
        } else {
          self.reference = code;
          problem = &self;
        }
        auto parsed = egca::cfg::ProgramCfg::CheckSyntax(code);
        bool bad_syntax = parsed.ok() && parsed.value().has_value();
        if (!problem->reference.empty() && problem == &self && bad_syntax) {
          // A reference must parse: use an empty module as the stand-in.
          self.reference = "pass\n";
        }
        ++routed;
        auto r = router.Route(code, *problem);
        if (!r.ok()) {
          ++errors;
          std::cerr << prog.origin << ": " << r.status().ToString() << "\n";
          return;
        }
        ++modes[egca::gates::FailureModeName(r->mode)];
        if (bad_syntax) {
          ++unparseable;
          if (r->mode != egca::gates::FailureMode::kSyntax) {
            ++unparseable_not_syntax;
            std::cerr << prog.origin << ": unparseable but routed "
                      << egca::gates::FailureModeName(r->mode) << "\n";
          }
        }
        if (routed % 1000 == 0) {
          std::cerr << fmt::format("{} programs routed\n", routed);
        }
      },
      &stats);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!st.ok()) {
    std::cerr << "router_robustness: " << st.ToString() << "\n";
    return 1;
  }
  std::string m;
  for (const auto& [k, v] : modes) m += fmt::format(" {}={}", k, v);
  fmt::print("programs routed={} (HumanEval-matched {}) bad_records={} egca_errors={}\n", routed,
             matched, stats.bad_records, errors);
  fmt::print("modes:{}\n", m);
  fmt::print("unparseable={} of which not SYNTAX={}\n", unparseable, unparseable_not_syntax);
  fmt::print("wall {:.1f} s, {:.1f} ms per program\n", seconds,
             routed ? 1000 * seconds / routed : 0.0);
  return errors == 0 && unparseable_not_syntax == 0 ? 0 : 1;
}
