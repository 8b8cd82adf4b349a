// egca-cfg: control-flow graphs, execution boundaries and structural comparability of a
// Python or C++ program, for people and (with --json) for machines.
//
//   egca-cfg prog.py                          CFG dump of every scope
//   egca-cfg prog.py --function f --boundaries
//   egca-cfg prog.py --compare ref.py [--json]   similarity, I_cmp, scope/block matching
//   egca-cfg completion.md --extract --entry-point f   extract the program first
//   egca-cfg prog.cpp [--compare ref.cpp]     C++: Clang CFGs (egca/cpp/analysis.h), the same
//                                             dumps and I_cmp; --lang auto|python|cpp
//
// Exit status: 0 done, 1 the program (or reference) does not parse, 2 bad usage (options
// that conflict or would be ignored), unreadable input, a directory or an empty file: one
// line on stderr.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <utility>
#include <nlohmann/json.hpp>

#include "egca/tools/cli.h"
#include "egca/cfg/boundaries.h"
#include "egca/cfg/cfg.h"
#include "egca/cfg/extract.h"
#include "egca/cfg/matching.h"
#include "egca/cfg/structure.h"
#include "egca/core/files.h"
#include "egca/core/language.h"
#include "egca/cpp/analysis.h"
#include "egca/cpp/router.h"
#include "egca/tools/language.h"

namespace {

using egca::cfg::BlockId;
using egca::cfg::BoundaryMap;
using egca::cfg::FunctionCfg;
using egca::cfg::ProgramCfg;
using json = nlohmann::ordered_json;

json SpanJson(const egca::SourceSpan& s) {
  return json{{"begin_byte", s.begin_byte},
              {"end_byte", s.end_byte},
              {"begin", {s.begin.line, s.begin.column}},
              {"end", {s.end.line, s.end.column}}};
}

json BoundariesJson(const BoundaryMap& map) {
  json arr = json::array();
  for (const auto& b : map.boundaries()) {
    arr.push_back(json{{"index", b.index},
                       {"block", b.block},
                       {"first_statement", b.first_statement},
                       {"statement_count", b.statement_count},
                       {"span", SpanJson(b.span)}});
  }
  return arr;
}

json ScopeJson(const ProgramCfg& p, int32_t index, bool with_boundaries,
               const egca::cfg::BoundaryOptions& bopts) {
  const FunctionCfg& f = p.scopes()[index];
  json blocks = json::array();
  for (BlockId b = 0; b < f.block_count(); ++b) {
    const auto& bb = f.block(b);
    json stmts = json::array();
    for (const auto& s : bb.statements) {
      stmts.push_back(json{{"kind", egca::cfg::StmtKindName(s.kind)},
                           {"label", egca::cfg::NormalizedLabel(s)},
                           {"span", SpanJson(s.span)},
                           {"loop_depth", s.loop_depth},
                           {"yield", s.contains_yield},
                           {"await", s.contains_await},
                           {"scopes", s.child_scopes}});
    }
    json succ = json::array();
    for (const auto& s : f.Successors(b)) {
      succ.push_back(json{{"block", s.block}, {"kind", egca::cfg::EdgeKindName(s.kind)}});
    }
    json jb{{"id", bb.id},
            {"kind", egca::cfg::BlockKindName(bb.kind)},
            {"terminator", egca::cfg::TerminatorName(bb.terminator)},
            {"loop_depth", bb.loop_depth},
            {"statements", stmts},
            {"successors", succ}};
    if (bb.kind == egca::cfg::BlockKind::kBasic) jb["span"] = SpanJson(bb.span);
    blocks.push_back(jb);
  }
  json j{{"index", index},
         {"name", f.name},
         {"qualified_name", f.qualified_name},
         {"kind", egca::cfg::ScopeKindName(f.kind)},
         {"first_line", f.first_line},
         {"parent", f.parent},
         {"generator", f.is_generator},
         {"async", f.is_async},
         {"span", SpanJson(f.span)},
         {"entry", f.entry},
         {"exit", f.exit},
         {"blocks", blocks}};
  if (with_boundaries) j["boundaries"] = BoundariesJson(BoundaryMap::Compute(f, bopts));
  return j;
}

// Reads and builds; on failure prints one line and returns nullopt (exit 2; *not_parsed:
// exit 1, a C++ program clang rejects). `lang`: "auto", "python" or "cpp"; *cpp says which.
std::optional<ProgramCfg> Load(const std::string& path, bool extract,
                               const std::string& entry_point, uint32_t* offset,
                               const std::string& lang, bool* cpp, bool* not_parsed) {
  egca::StatusOr<std::string> text = egca::ReadSourceFile(path);
  if (!text.ok()) {
    fmt::print(stderr, "egca-cfg: {}\n", text.status().ToString());
    return std::nullopt;
  }
  std::string source = std::move(text).value();
  if (source.find_first_not_of(" \t\r\n\f\v") == std::string::npos) {
    fmt::print(stderr, "egca-cfg: {}: empty file\n", path);
    return std::nullopt;
  }
  *cpp = egca::tools::ResolveLanguage(lang, path, source) == egca::Language::kCpp;
  if (*cpp) {
    if (extract) {
      fmt::print(stderr, "egca-cfg: --extract is Python-only\n");
      return std::nullopt;
    }
    auto analysis = egca::cpp::AnalyzeCpp(source);
    if (!analysis.ok()) {
      // As for Python: a program that does not parse is a result (stdout, exit 1).
      if (analysis.status().code() == egca::StatusCode::kInvalidArgument) {
        *not_parsed = true;
        fmt::print("{}: does not parse: {}\n", path, analysis.status().message());
      } else {
        fmt::print(stderr, "egca-cfg: {}: {}\n", path, analysis.status().ToString());
      }
      return std::nullopt;
    }
    return (*analysis)->program;
  }
  if (extract) {
    egca::cfg::ExtractedProgram e =
        egca::cfg::ExtractProgram(source, egca::cfg::ExtractOptions().set_entry_point(entry_point));
    source = std::move(e.code);
    if (offset) *offset = e.offset;
  }
  egca::StatusOr<ProgramCfg> p = ProgramCfg::Build(source);
  if (!p.ok()) {
    fmt::print(stderr, "egca-cfg: {}: {}\n", path, p.status().ToString());
    return std::nullopt;
  }
  return std::move(p).value();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Control-flow graphs, execution boundaries and structural comparability of "
      "Python and C++ programs"};
  std::string file, function, compare, entry_point, lang = "auto";
  bool boundaries = false, statements = false, as_json = false, extract = false;
  double threshold = egca::cfg::StructureOptions().threshold;  // --threshold (else per language)
  app.add_option("FILE", file, "Python or C++ source (UTF-8)")->required();
  app.add_option("--lang", lang, egca::tools::kLanguageHelp)
      ->check(CLI::IsMember({"auto", "python", "cpp"}));
  app.add_option("--function", function, "only this scope (co_name or qualified name)");
  app.add_flag("--boundaries", boundaries, "print execution boundaries instead of the CFG");
  app.add_flag("--statements", statements, "boundaries per statement instead of per block");
  app.add_flag("--json", as_json, "JSON output");
  app.add_option("--compare", compare, "reference program: print similarity and I_cmp");
  CLI::Option* threshold_opt = app.add_option("--threshold", threshold, "comparability threshold")
                                   ->check(CLI::Range(0.0, 1.0));
  app.add_flag("--extract", extract,
               "FILE is an LLM completion: extract the program (fences, prose) first");
  app.add_option("--entry-point", entry_point, "function the program defines (for --extract)");
  if (auto exit_code = egca::tools::ParseArgs(app, argc, argv, "egca-cfg")) return *exit_code;
  // Options another option makes meaningless are errors, not silently ignored.
  const std::pair<bool, const char*> conflicts[] = {
      {!compare.empty() && boundaries,
       "--compare and --boundaries conflict: --compare prints similarity, not boundaries"},
      {!compare.empty() && statements, "--compare and --statements conflict"},
      {!compare.empty() && !function.empty(),
       "--compare and --function conflict: --compare compares every scope"},
      {statements && !boundaries, "--statements needs --boundaries"},
      {threshold_opt->count() > 0 && compare.empty(), "--threshold needs --compare REF"},
      {!entry_point.empty() && !extract, "--entry-point needs --extract"},
  };
  for (const auto& [applies, message] : conflicts) {
    if (!applies) continue;
    fmt::print(stderr, "egca-cfg: {}\n", message);
    return 2;
  }

  uint32_t offset = 0;
  bool cpp = false, not_parsed = false;
  std::optional<ProgramCfg> program =
      Load(file, extract, entry_point, &offset, lang, &cpp, &not_parsed);
  if (!program) return not_parsed ? 1 : 2;
  if (!program->parsed()) {
    const auto& err = *program->syntax_error();
    if (as_json) {
      fmt::print("{}\n", json{{"file", file},
                              {"parsed", false},
                              {"offset", offset},
                              {"error", {{"message", err.message}, {"span", SpanJson(err.span)}}}}
                             .dump(2));
    } else {
      fmt::print("{}: does not parse: {} at {}\n", file, err.message, err.span.ToString());
    }
    return 1;
  }

  if (!compare.empty()) {
    bool ref_cpp = false, ref_not_parsed = false;
    std::optional<ProgramCfg> ref =
        Load(compare, false, "", nullptr, cpp ? "cpp" : "python", &ref_cpp, &ref_not_parsed);
    if (!ref) return ref_not_parsed ? 1 : 2;
    if (!ref->parsed()) {
      fmt::print("{}: reference does not parse: {} at {}\n", compare, ref->syntax_error()->message,
                 ref->syntax_error()->span.ToString());
      return 1;
    }
    // Each language's own calibrated threshold unless --threshold says otherwise.
    egca::cfg::StructureOptions so = cpp ? egca::cpp::CppStructureOptions() : egca::cfg::StructureOptions();
    if (threshold_opt->count() > 0) so.threshold = threshold;
    egca::cfg::Comparability c = egca::cfg::CompareStructure(*program, *ref, so);
    std::vector<egca::cfg::ScopeMatch> scopes = egca::cfg::MatchScopes(*program, *ref);
    if (as_json) {
      json jm = json::array();
      for (const auto& m : scopes) {
        egca::cfg::BlockMatching bm =
            egca::cfg::MatchBlocks(*program, m.candidate, *ref, m.reference);
        json pairs = json::array();
        for (const auto& p : bm.pairs) pairs.push_back({p.candidate, p.reference, p.score});
        jm.push_back(json{{"candidate", m.candidate},
                          {"reference", m.reference},
                          {"score", m.score},
                          {"blocks", pairs},
                          {"unmatched_candidate", bm.unmatched_candidate},
                          {"unmatched_reference", bm.unmatched_reference}});
      }
      fmt::print("{}\n", json{{"candidate", file},
                              {"reference", compare},
                              {"score", c.score},
                              {"threshold", c.threshold},
                              {"comparable", c.comparable},
                              {"scopes", jm}}
                             .dump(2));
    } else {
      fmt::print("similarity {:.4f} threshold {:.4f} I_cmp {}\n", c.score, c.threshold,
                 c.comparable ? 1 : 0);
      for (const auto& m : scopes) {
        fmt::print("scope {} ({}) ~ {} ({}) {:.4f}\n", m.candidate,
                   program->scopes()[m.candidate].qualified_name, m.reference,
                   ref->scopes()[m.reference].qualified_name, m.score);
        egca::cfg::BlockMatching bm =
            egca::cfg::MatchBlocks(*program, m.candidate, *ref, m.reference);
        std::string dump = bm.Dump();
        for (size_t pos = 0; pos < dump.size();) {
          size_t nl = dump.find('\n', pos);
          fmt::print("  {}\n", dump.substr(pos, nl - pos));
          pos = nl + 1;
        }
      }
    }
    return 0;
  }

  std::vector<int32_t> selected;
  if (!function.empty()) {
    int32_t idx = program->FindScopeByName(function);
    if (idx < 0) {
      fmt::print(stderr, "egca-cfg: {}: no function/scope named '{}'\n", file, function);
      return 2;
    }
    selected.push_back(idx);
  } else {
    for (size_t i = 0; i < program->scopes().size(); ++i)
      selected.push_back(static_cast<int32_t>(i));
  }
  egca::cfg::BoundaryOptions bopts;
  if (statements) bopts.granularity = egca::cfg::BoundaryGranularity::kStatement;
  if (as_json) {
    json scopes = json::array();
    for (int32_t i : selected) scopes.push_back(ScopeJson(*program, i, boundaries, bopts));
    json unsupported = json::array();
    for (const auto& u : program->unsupported()) {
      unsupported.push_back(json{{"what", u.what}, {"span", SpanJson(u.span)}});
    }
    fmt::print("{}\n", json{{"file", file},
                            {"language", cpp ? "cpp" : "python"},
                            {"parsed", true},
                            {"offset", offset},
                            {"unsupported", unsupported},
                            {"scopes", scopes}}
                           .dump(2));
    return 0;
  }
  for (const auto& u : program->unsupported()) {
    fmt::print("unsupported at {}: {}\n", u.span.ToString(), u.what);
  }
  for (int32_t i : selected) {
    if (boundaries) {
      const FunctionCfg& f = program->scopes()[i];
      fmt::print("scope {} {} first_line={}\n", i, f.qualified_name, f.first_line);
      fmt::print("{}", BoundaryMap::Compute(f, bopts).Dump());
    } else {
      fmt::print("{}", program->DumpScope(i));
    }
  }
  return 0;
}
