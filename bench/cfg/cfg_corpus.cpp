// Robustness and throughput of the CFG builder over every real program in the shared data:
// how many parse, how many do not (SYNTAX), how many use unsupported constructs, and that
// none crashes. Throughput is measured on programs already in memory, against a baseline
// of tree-sitter parsing alone over the same programs in the same run.
//
//   cfg_corpus [--data DIR] [--max-codet N] [--no-tarballs] [--show-errors N]
//              [--dump-verdicts FILE]   (check against CPython: check_syntax_vs_cpython.py)
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "corpus.h"
#include "egca/cfg/boundaries.h"
#include "egca/cfg/cfg.h"
#include "egca/cfg/extract.h"

namespace {

struct Row {
  int64_t programs = 0, parsed = 0, not_parsed = 0, unsupported = 0, errors = 0;
  int64_t scopes = 0, blocks = 0;
};

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CFG builder robustness and throughput over the real corpus"};
  egca::cfg::corpus::Options opts;
  opts.data_dir = EGCA_DATA_DIR;
  bool no_tarballs = false;
  int show_errors = 5;
  std::string dump_verdicts;
  app.add_option("--dump-verdicts", dump_verdicts,
                 "write one JSON line per program: origin, code, parsed, message, line");
  app.add_option("--data", opts.data_dir, "shared data directory");
  app.add_option("--max-codet", opts.max_codet, "CodeT samples to use (-1: all)");
  app.add_flag("--no-tarballs", no_tarballs, "skip MapCoder/LDB/Reflexion");
  app.add_option("--show-errors", show_errors, "print this many syntax errors per dataset");
  CLI11_PARSE(app, argc, argv);
  opts.tarballs = !no_tarballs;

  struct Item {
    std::string dataset, origin, code;
    int extraction = -1;  // ExtractionKind for raw completions
  };
  std::vector<Item> items;
  egca::cfg::corpus::Stats stats;
  egca::Status st = egca::cfg::corpus::ForEachProgram(
      opts,
      [&](const egca::cfg::corpus::Program& p) {
        if (!p.completion) {
          items.push_back(Item{p.dataset, p.origin, p.text, -1});
          return;
        }
        egca::cfg::ExtractedProgram e = egca::cfg::ExtractProgram(p.text);
        items.push_back(Item{p.dataset, p.origin, std::move(e.code), static_cast<int>(e.kind)});
      },
      &stats);
  if (!st.ok()) {
    fmt::print(stderr, "cfg_corpus: {}\n", st.ToString());
    return 2;
  }
  for (const std::string& m : stats.bad_record_messages) fmt::print("skipped record: {}\n", m);
  size_t bytes = 0;
  for (const Item& it : items) bytes += it.code.size();

  // Baseline: tree-sitter parsing alone (ProgramCfg::CheckSyntax) over the same programs.
  auto tp = std::chrono::steady_clock::now();
  int64_t clean = 0;
  for (const Item& it : items) {
    auto r = egca::cfg::ProgramCfg::CheckSyntax(it.code);
    clean += r.ok() && !r->has_value();
  }
  double parse_s = Seconds(std::chrono::steady_clock::now() - tp);

  std::FILE* verdicts = dump_verdicts.empty() ? nullptr : std::fopen(dump_verdicts.c_str(), "w");
  std::map<std::string, Row> rows;
  std::map<int, std::pair<int64_t, int64_t>> extraction;  // kind -> (programs, parsed)
  std::map<std::string, int> shown;
  auto t0 = std::chrono::steady_clock::now();
  for (const Item& it : items) {
    Row& r = rows[it.dataset];
    ++r.programs;
    egca::StatusOr<egca::cfg::ProgramCfg> p = egca::cfg::ProgramCfg::Build(it.code);
    if (!p.ok()) {
      ++r.errors;
      fmt::print("error: {}: {}\n", it.origin, p.status().ToString());
      continue;
    }
    if (verdicts) {
      nlohmann::json v{{"origin", it.origin}, {"code", it.code}, {"parsed", p->parsed()}};
      if (!p->parsed()) {
        v["message"] = p->syntax_error()->message;
        v["line"] = p->syntax_error()->span.begin.line;
      }
      std::fprintf(verdicts, "%s\n",
                   v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    if (it.extraction >= 0) {
      ++extraction[it.extraction].first;
      extraction[it.extraction].second += p->parsed();
    }
    if (!p->parsed()) {
      ++r.not_parsed;
      if (shown[it.dataset]++ < show_errors) {
        fmt::print("not parsed: {}: {} at {}\n", it.origin, p->syntax_error()->message,
                   p->syntax_error()->span.ToString());
      }
      continue;
    }
    ++r.parsed;
    if (!p->unsupported().empty()) ++r.unsupported;
    r.scopes += static_cast<int64_t>(p->scopes().size());
    for (const auto& s : p->scopes()) r.blocks += static_cast<int64_t>(s.block_count());
  }
  double build_s = Seconds(std::chrono::steady_clock::now() - t0);
  if (verdicts) std::fclose(verdicts);

  // Same programs again, also computing block and statement boundaries of every scope and
  // a full text dump: the cost a divergence run adds on top of building.
  auto t1 = std::chrono::steady_clock::now();
  size_t sink = 0;
  for (const Item& it : items) {
    egca::StatusOr<egca::cfg::ProgramCfg> p = egca::cfg::ProgramCfg::Build(it.code);
    if (!p.ok() || !p->parsed()) continue;
    for (const auto& s : p->scopes()) {
      sink += egca::cfg::BoundaryMap::Compute(s).size();
      sink += egca::cfg::BoundaryMap::Compute(s, egca::cfg::BoundaryOptions().set_granularity(
                                                     egca::cfg::BoundaryGranularity::kStatement))
                  .size();
    }
    sink += p->Dump().size();
  }
  double full_s = Seconds(std::chrono::steady_clock::now() - t1);

  Row total;
  fmt::print("\n{:<10} {:>9} {:>9} {:>11} {:>11} {:>8} {:>8} {:>9}\n", "dataset", "programs",
             "parsed", "not_parsed", "unsupported", "errors", "scopes", "blocks");
  for (const auto& [name, r] : rows) {
    fmt::print("{:<10} {:>9} {:>9} {:>11} {:>11} {:>8} {:>8} {:>9}\n", name, r.programs, r.parsed,
               r.not_parsed, r.unsupported, r.errors, r.scopes, r.blocks);
    total.programs += r.programs;
    total.parsed += r.parsed;
    total.not_parsed += r.not_parsed;
    total.unsupported += r.unsupported;
    total.errors += r.errors;
    total.scopes += r.scopes;
    total.blocks += r.blocks;
  }
  fmt::print("{:<10} {:>9} {:>9} {:>11} {:>11} {:>8} {:>8} {:>9}\n", "total", total.programs,
             total.parsed, total.not_parsed, total.unsupported, total.errors, total.scopes,
             total.blocks);
  if (!extraction.empty()) {
    fmt::print("\nraw completions through ExtractProgram:\n");
    for (const auto& [kind, counts] : extraction) {
      fmt::print("  {:<15} {:>7} programs, {:>7} parse\n",
                 egca::cfg::ExtractionKindName(static_cast<egca::cfg::ExtractionKind>(kind)),
                 counts.first, counts.second);
    }
  }
  fmt::print("\nfiles {} records {} bad records {} (skipped) crashes 0\n", stats.files,
             stats.records, stats.bad_records);
  fmt::print("parse only (baseline): {:.2f} s  {:.0f} programs/s  {:.2f} MB/s  ({} clean)\n",
             parse_s, items.size() / parse_s, bytes / 1e6 / parse_s, clean);
  fmt::print("build:                 {:.2f} s  {:.0f} programs/s  {:.2f} MB/s\n", build_s,
             items.size() / build_s, bytes / 1e6 / build_s);
  fmt::print("build / parse-only ratio: {:.2f}x\n", build_s / parse_s);
  fmt::print("build+boundaries+dump: {:.2f} s  {:.0f} programs/s  ({:.2f}x of build) [{}]\n",
             full_s, items.size() / full_s, full_s / build_s, sink % 10);
  return total.errors == 0 ? 0 : 1;
}
