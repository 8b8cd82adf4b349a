// cpp_cost: per-candidate cost of C++ grading and tracing on the first N HumanEval-X C++
// references (program = reference + the test's main).
//   compile, no PCH      clang++ with an empty program cache, PCH off
//   compile, PCH         clang++ with an empty program cache, PCH on (built beforehand)
//   run                  one sandboxed run of the compiled program (the test's main)
//   traced               instrument (egca-cpp-instrument) + compile instrumented (PCH) + run
//   traced run           the traced program's sandboxed run alone, vs `run`
//   CFG                  egca-cpp-cfg: the Clang CFG + facts pass behind I_cmp and the
//                        constraint checkers (a clang front-end parse, no PCH), vs compile
// Medians and totals over the programs; every compile uses a fresh cache directory so
// nothing is served from the content cache.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "egca/cpp/analysis.h"
#include "egca/cpp/executor.h"
#include "egca/datasets/datasets.h"
#include "../common/stats.h"

using namespace egca;

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

using egca::bench::Median;

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cpp_cost: C++ compile / run / trace cost"};
  int n = 20;
  std::string dataset = "humaneval";
  std::string cache = "/var/tmp/egca-cpp-bench";
  app.add_option("-n", n, "programs (first N HumanEval-X C++ problems)");
  app.add_option("--cache", cache, "scratch cache root (removed first)");
  app.add_option("--dataset", dataset, "humaneval (few headers) or mbxp (<bits/stdc++.h>)");
  CLI11_PARSE(app, argc, argv);
  datasets::LoadReport report;
  const std::string file = dataset == "mbxp" ? "/cpp/mbcpp_release_v1.2.jsonl.gz"
                                             : "/cpp/humaneval_cpp.jsonl.gz";
  auto loaded = datasets::LoadProblems(std::string(EGCA_DATA_DIR) + file, {}, &report);
  if (!loaded.ok()) {
    std::cerr << "cpp_cost: " << loaded.status().ToString() << "\n";
    return 2;
  }
  std::vector<datasets::ProblemRecord> kept;
  for (auto& p : *loaded) {
    if (!p.references.empty()) kept.push_back(std::move(p));
  }
  StatusOr<std::vector<datasets::ProblemRecord>> problems = std::move(kept);
  if (!problems.ok()) {
    std::cerr << "cpp_cost: " << problems.status().ToString() << "\n";
    return 2;
  }
  std::filesystem::remove_all(cache);
  cpp::CppExecutorOptions with_pch, without_pch;
  with_pch.compiler.cache_dir = cache + "/pch";
  with_pch.compiler.pch_only_for_bits = false;  // measure the PCH on every program
  without_pch.compiler.cache_dir = cache + "/nopch";
  without_pch.compiler.use_pch = false;
  auto ex = cpp::CppExecutor::Create(with_pch);
  auto ex_nopch = cpp::CppExecutor::Create(without_pch);
  if (!ex.ok() || !ex_nopch.ok()) {
    std::cerr << "cpp_cost: cannot start: "
              << (ex.ok() ? ex_nopch.status() : ex.status()).ToString() << "\n";
    return 1;
  }
  double t0 = Now();
  if (auto s = (*ex)->compiler().PreparePch(); !s.ok()) {
    std::cerr << "cpp_cost: " << s.ToString() << "\n";
    return 1;
  }
  const double pch_build = Now() - t0;
  tracer::RunOptions run;
  run.limits.wall_seconds = 10;
  std::vector<double> c_nopch, c_pch, r_plain, traced_total, r_traced, events, cfg_pass;
  for (int i = 0; i < n && i < static_cast<int>(problems->size()); ++i) {
    const auto& p = (*problems)[i];
    const std::string test = cpp::TestCodeOf(p.tests[0]);
    t0 = Now();
    auto a = (*ex_nopch)->compiler().Compile(p.references[0], test);
    c_nopch.push_back(Now() - t0);
    t0 = Now();
    auto b = (*ex)->compiler().Compile(p.references[0], test);
    c_pch.push_back(Now() - t0);
    if (!a.ok() || !b.ok() || !b->ok) {
      std::cerr << "cpp_cost: " << p.id << " does not compile\n";
      continue;
    }
    t0 = Now();
    auto analysed = cpp::AnalyzeCpp(p.references[0]);
    if (analysed.ok()) {
      cfg_pass.push_back(Now() - t0);
    } else {
      std::cerr << "cpp_cost: " << p.id << ": " << analysed.status().ToString() << "\n";
    }
    auto r = (*ex)->RunCompiled(b->shared_object, p.tests[0], run);
    if (r.ok()) r_plain.push_back(r->verdict.wall_seconds);
    t0 = Now();
    auto tr = (*ex)->RunTraced(p.references[0], p.tests[0], run);
    traced_total.push_back(Now() - t0);
    if (tr.ok() && tr->note.empty()) {
      r_traced.push_back(tr->run.verdict.wall_seconds);
      events.push_back(static_cast<double>(tr->trace.events.size()));
    } else if (tr.ok()) {
      std::cerr << "cpp_cost: " << p.id << ": " << tr->note << "\n";
    }
  }
  std::cout << fmt::format("programs: {} ({} references), PCH build once: {:.2f} s\n",
                           c_pch.size(), dataset, pch_build);
  std::cout << "| step | median (s) | total (s) |\n|---|---|---|\n";
  auto row = [](const char* name, const std::vector<double>& v) {
    double total = 0;
    for (double x : v) total += x;
    std::cout << fmt::format("| {} | {:.4f} | {:.2f} |\n", name, Median(v), total);
  };
  row("compile, no PCH", c_nopch);
  row("compile, PCH", c_pch);
  row("sandboxed run (untraced)", r_plain);
  row("traced: instrument + compile (PCH) + run", traced_total);
  row("traced run alone", r_traced);
  row("CFG: egca-cpp-cfg (Clang CFG + facts)", cfg_pass);
  std::cout << fmt::format("snapshot events per run: median {:.0f}\n", Median(events));
  auto ratio = [](const std::vector<double>& a, const std::vector<double>& b) {
    return Median(b) > 0 ? Median(a) / Median(b) : 0.0;
  };
  std::cout << fmt::format("CFG pass / compile (PCH): {:.2f}x; CFG pass / compile (no PCH): {:.2f}x (medians)\n",
                           ratio(cfg_pass, c_pch), ratio(cfg_pass, c_nopch));
  return 0;
}
