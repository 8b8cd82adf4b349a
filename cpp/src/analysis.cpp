#include "egca/cpp/analysis.h"

#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

#include "egca/core/span.h"
#include "egca/cpp/compiler.h"
#include "egca/sandbox/command.h"

namespace egca::cpp {
namespace {

std::string CfgToolPath() {
  if (const char* p = std::getenv("EGCA_CPP_CFG"); p != nullptr && *p) return p;
#ifdef EGCA_CPP_CFG
  return EGCA_CPP_CFG;
#else
  return "";
#endif
}

// A precompiled <bits/stdc++.h> for egca-cpp-cfg, built once per cache directory by the
// compiler's clang driver with the tool's own language flags (the tool is libclang-cpp 14:
// the same compiler; named by the compiler's key, which holds clang's version and the
// standard): parsing the whole library is most of the tool's time on competitive-style
// programs (bench/cpp_cost). "" when it cannot be built (the tool then parses the header
// itself).
std::string AnalysisPch() {
  static std::once_flag once;
  static std::string path;
  std::call_once(once, [] {
    auto compiler = Compiler::Create();
    if (!compiler.ok()) return;
    auto pch = EnsureStdcxxPch((*compiler)->clang(), {"-std=c++17", "-w", "-Wno-register"},
                               (*compiler)->cache_dir(), "cfg-stdcxx-" + (*compiler)->flags_key(),
                               120);
    if (pch.ok()) path = *pch;
  });
  return path;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (true) {
    size_t tab = line.find('\t', pos);
    out.push_back(line.substr(pos, tab == std::string_view::npos ? std::string_view::npos
                                                                 : tab - pos));
    if (tab == std::string_view::npos) break;
    pos = tab + 1;
  }
  return out;
}

template <typename Enum, size_t N>
std::optional<Enum> ByName(std::string_view name, const char* (*name_of)(Enum),
                           const Enum (&all)[N]) {
  for (Enum e : all) {
    if (name == name_of(e)) return e;
  }
  return std::nullopt;
}

constexpr cfg::StmtKind kStmtKinds[] = {
    cfg::StmtKind::kExpression, cfg::StmtKind::kAssign,    cfg::StmtKind::kAugAssign,
    cfg::StmtKind::kPass,       cfg::StmtKind::kReturn,    cfg::StmtKind::kRaise,
    cfg::StmtKind::kBreak,      cfg::StmtKind::kContinue,  cfg::StmtKind::kIf,
    cfg::StmtKind::kElif,       cfg::StmtKind::kWhile,     cfg::StmtKind::kFor,
    cfg::StmtKind::kTry,        cfg::StmtKind::kExcept,    cfg::StmtKind::kMatch,
    cfg::StmtKind::kCase};
constexpr cfg::Terminator kTerminators[] = {
    cfg::Terminator::kNone,     cfg::Terminator::kIf,         cfg::Terminator::kWhile,
    cfg::Terminator::kFor,      cfg::Terminator::kCaseTest,   cfg::Terminator::kExceptTest,
    cfg::Terminator::kReturn,   cfg::Terminator::kRaise,      cfg::Terminator::kBreak,
    cfg::Terminator::kContinue};
constexpr cfg::EdgeKind kEdgeKinds[] = {
    cfg::EdgeKind::kNormal,    cfg::EdgeKind::kTrue,  cfg::EdgeKind::kFalse,
    cfg::EdgeKind::kLoopBack,  cfg::EdgeKind::kException, cfg::EdgeKind::kBreak,
    cfg::EdgeKind::kContinue,  cfg::EdgeKind::kReturn};
constexpr cfg::BlockKind kBlockKinds[] = {cfg::BlockKind::kEntry, cfg::BlockKind::kExit,
                                          cfg::BlockKind::kBasic};

bool ParseUint(std::string_view text, uint32_t* out) {
  if (text.empty() || text.size() > 10) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > 0xffffffffull) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

bool IsSort(const std::string& name) {
  return name == "std::sort" || name == "std::stable_sort" || name == "std::partial_sort" ||
         name == "std::partial_sort_copy" || name == ".sort";
}

// `#include <name>` lines (the only includes egca::cpp compiles).
void AddIncludes(const LineIndex& lines, gates::ProgramFacts* facts) {
  for (int32_t line = 1; line <= lines.line_count(); ++line) {
    std::string_view text = lines.LineText(line);
    size_t b = text.find_first_not_of(" \t");
    if (b == std::string_view::npos || text[b] != '#') continue;
    size_t word = text.find_first_not_of(" \t", b + 1);
    if (word == std::string_view::npos || text.substr(word, 7) != "include") continue;
    size_t open = text.find('<', word + 7), close = text.find('>', word + 7);
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      continue;
    }
    gates::ImportFact f;
    f.module = std::string(text.substr(open + 1, close - open - 1));
    f.span = lines.LineSpan(line);
    facts->imports.push_back(std::move(f));
  }
}

}  // namespace

StatusOr<CppAnalysis> ParseAnalysis(std::string source, std::string_view output) {
  const LineIndex lines(source);
  const uint32_t size = static_cast<uint32_t>(source.size());
  std::vector<cfg::FunctionCfg> scopes(1);
  cfg::FunctionCfg& file = scopes[0];
  file.kind = cfg::ScopeKind::kModule;
  file.name = file.qualified_name = "<module>";
  file.span = lines.SpanFromBytes(0, size);
  {
    cfg::BasicBlock entry, exit;
    entry.kind = cfg::BlockKind::kEntry;
    exit.kind = cfg::BlockKind::kExit;
    exit.id = 1;
    boost::add_vertex(entry, file.graph);
    boost::add_vertex(exit, file.graph);
    boost::add_edge(0, 1, cfg::Edge{cfg::EdgeKind::kNormal}, file.graph);
    file.exit = 1;
  }
  gates::ProgramFacts facts;
  int64_t line_no = 0;
  auto bad = [&](std::string_view what) {
    return InvalidArgument(fmt::format("egca-cpp-cfg output line {}: {}", line_no, what));
  };
  auto span = [&](std::string_view b, std::string_view e, SourceSpan* out) {
    uint32_t begin = 0, end = 0;
    if (!ParseUint(b, &begin) || !ParseUint(e, &end) || begin > end || end > size) return false;
    *out = lines.SpanFromBytes(begin, end);
    return true;
  };
  size_t pos = 0;
  while (pos < output.size()) {
    size_t nl = output.find('\n', pos);
    std::string_view line =
        output.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? output.size() : nl + 1;
    ++line_no;
    if (line.empty()) continue;
    std::vector<std::string_view> f = Fields(line);
    const std::string_view tag = f[0];
    const int32_t scope = static_cast<int32_t>(scopes.size()) - 1;
    if (tag == "F") {
      if (f.size() != 7) return bad("F needs 7 fields");
      cfg::FunctionCfg fn;
      fn.kind = cfg::ScopeKind::kFunction;
      fn.name = std::string(f[1]);
      fn.qualified_name = std::string(f[2]);
      fn.parent = 0;
      uint32_t first_line = 0;
      if (!span(f[3], f[4], &fn.span) || !span(f[3], f[5], &fn.header_span) ||
          !ParseUint(f[6], &first_line)) {
        return bad("F spans");
      }
      fn.first_line = static_cast<int32_t>(first_line);
      scopes.push_back(std::move(fn));
    } else if (tag == "B") {
      if (f.size() != 4 || scope == 0) return bad("B needs 4 fields, after an F");
      cfg::FunctionCfg& fn = scopes.back();
      uint32_t id = 0;
      auto kind = ByName(f[2], cfg::BlockKindName, kBlockKinds);
      auto term = ByName(f[3], cfg::TerminatorName, kTerminators);
      if (!ParseUint(f[1], &id) || id != fn.block_count() || !kind || !term) {
        return bad("B fields");
      }
      cfg::BasicBlock b;
      b.id = static_cast<int32_t>(id);
      b.kind = *kind;
      b.terminator = *term;
      boost::add_vertex(b, fn.graph);
      if (*kind == cfg::BlockKind::kExit) fn.exit = id;
    } else if (tag == "S") {
      if (f.size() != 6 || scope == 0) return bad("S needs 6 fields, after an F");
      cfg::FunctionCfg& fn = scopes.back();
      uint32_t block = 0, depth = 0;
      cfg::Statement st;
      auto kind = ByName(f[2], cfg::StmtKindName, kStmtKinds);
      if (!ParseUint(f[1], &block) || block >= fn.block_count() || !kind ||
          !ParseUint(f[3], &depth) || !span(f[4], f[5], &st.span)) {
        return bad("S fields");
      }
      st.kind = *kind;
      st.loop_depth = static_cast<int32_t>(depth);
      cfg::BasicBlock& b = fn.graph[block];
      if (b.statements.empty()) {
        b.span = st.span;
        b.loop_depth = st.loop_depth;
      } else {
        b.span = lines.SpanFromBytes(b.span.begin_byte, st.span.end_byte);
      }
      facts.statements.push_back(st.span);
      b.statements.push_back(std::move(st));
    } else if (tag == "E") {
      if (f.size() != 4 || scope == 0) return bad("E needs 4 fields, after an F");
      cfg::FunctionCfg& fn = scopes.back();
      uint32_t from = 0, to = 0;
      auto kind = ByName(f[3], cfg::EdgeKindName, kEdgeKinds);
      if (!ParseUint(f[1], &from) || !ParseUint(f[2], &to) || from >= fn.block_count() ||
          to >= fn.block_count() || !kind) {
        return bad("E fields");
      }
      boost::add_edge(from, to, cfg::Edge{*kind}, fn.graph);
    } else if (tag == "L") {
      gates::LoopFact loop;
      uint32_t depth = 0;
      if (f.size() != 5 || (f[1] != "for" && f[1] != "while") || !ParseUint(f[2], &depth) ||
          depth == 0 || !span(f[3], f[4], &loop.span)) {
        return bad("L fields");
      }
      loop.kind = f[1] == "for" ? gates::LoopKind::kFor : gates::LoopKind::kWhile;
      loop.depth = static_cast<int32_t>(depth);
      loop.scope = scope;
      facts.max_loop_depth = std::max(facts.max_loop_depth, loop.depth);
      facts.loops.push_back(loop);
    } else if (tag == "C") {
      gates::CallFact call;
      if (f.size() != 5 || f[1].empty() || !span(f[3], f[4], &call.span)) return bad("C fields");
      call.name = std::string(f[1]);
      call.scope = scope;
      if (IsSort(call.name)) facts.sorts.push_back({call.name, call.span});
      facts.calls.push_back(std::move(call));
    } else if (tag == "R") {
      gates::RecursiveCall r;
      if (f.size() != 6 || (f[3] != "0" && f[3] != "1") || !span(f[4], f[5], &r.span)) {
        return bad("R fields");
      }
      r.function = std::string(f[1]);
      r.callee = std::string(f[2]);
      r.direct = f[3] == "1";
      facts.recursive_calls.push_back(std::move(r));
    } else if (tag == "T") {
      gates::StructureUse use;
      auto structure = f.size() == 4 ? gates::ParseDataStructure(f[1]) : std::nullopt;
      if (!structure || !span(f[2], f[3], &use.span)) return bad("T fields");
      use.structure = *structure;
      facts.structures.push_back(use);
    } else {
      return bad(fmt::format("unknown record \"{}\"", tag));
    }
  }
  for (size_t i = 1; i < scopes.size(); ++i) {
    if (scopes[i].block_count() < 2 || scopes[i].graph[0].kind != cfg::BlockKind::kEntry ||
        scopes[i].graph[scopes[i].exit].kind != cfg::BlockKind::kExit) {
      return InvalidArgument(
          fmt::format("egca-cpp-cfg output: function {} has no Entry and Exit", scopes[i].name));
    }
  }
  AddIncludes(lines, &facts);
  CppAnalysis out;
  out.program = cfg::ProgramCfg::FromScopes(std::move(source), std::move(scopes));
  out.facts = std::move(facts);
  return out;
}

StatusOr<std::shared_ptr<const CppAnalysis>> AnalyzeCpp(std::string_view source) {
  struct Memo {
    std::string source;
    std::shared_ptr<const CppAnalysis> analysis;
  };
  thread_local Memo memo;
  if (memo.analysis && memo.source == source) return memo.analysis;
  const std::string tool = CfgToolPath();
  if (tool.empty()) {
    return FailedPrecondition(
        "C++ CFGs need egca-cpp-cfg (configure with libclang-14-dev and libclang-cpp14-dev "
        "installed)");
  }
  sandbox::CommandOptions options = sandbox::CommandOptions::Within(30, 64u << 20);
  options.stdin_data = std::string(source);
  std::vector<std::string> argv = {tool};
  const std::string pch =
      source.find("bits/stdc++.h") != std::string_view::npos ? AnalysisPch() : std::string();
  if (!pch.empty()) argv.insert(argv.end(), {"-include-pch", pch});
  EGCA_ASSIGN_OR_RETURN(auto run, sandbox::RunCommand(argv, options));
  if (!pch.empty() && !run.ok() && !run.timed_out) {
    // A precompiled header the tool refuses (a stale or foreign file): parse it instead.
    EGCA_ASSIGN_OR_RETURN(run, sandbox::RunCommand({tool}, options));
  }
  if (run.timed_out) return InvalidArgument("egca-cpp-cfg timed out (30 s)");
  if (!run.ok()) {
    std::string first = run.stderr_data.substr(0, run.stderr_data.find('\n'));
    return InvalidArgument(first.empty() ? "the program does not parse" : first);
  }
  EGCA_ASSIGN_OR_RETURN(CppAnalysis parsed, ParseAnalysis(std::string(source), run.stdout_data));
  memo.source = std::string(source);
  memo.analysis = std::make_shared<const CppAnalysis>(std::move(parsed));
  return memo.analysis;
}

namespace {

class CppSpecChecker final : public gates::ConstraintChecker {
 public:
  explicit CppSpecChecker(gates::ConstraintSpec spec)
      : spec_(std::move(spec)), name_(spec_.ToString()) {}
  std::string name() const override { return name_; }
  std::optional<gates::ConstraintViolation> Violation(
      std::string_view source, const cfg::ProgramCfg& /*python*/) const override {
    auto analysis = AnalyzeCpp(source);
    if (!analysis.ok()) return std::nullopt;
    std::vector<gates::ConstraintViolation> v = gates::CheckFacts((*analysis)->facts, {spec_});
    if (v.empty()) return std::nullopt;
    return v.front();
  }

 private:
  const gates::ConstraintSpec spec_;
  const std::string name_;
};

}  // namespace

StatusOr<std::shared_ptr<const gates::ConstraintChecker>> MakeCppConstraint(
    const gates::ConstraintSpec& spec) {
  EGCA_RETURN_IF_ERROR(gates::ValidateConstraintSpec(spec));
  return std::shared_ptr<const gates::ConstraintChecker>(std::make_shared<CppSpecChecker>(spec));
}

StatusOr<gates::ConstraintSet> MakeCppConstraintSet(
    const std::vector<gates::ConstraintSpec>& specs) {
  gates::ConstraintSet out;
  for (const auto& spec : specs) {
    EGCA_ASSIGN_OR_RETURN(auto checker, MakeCppConstraint(spec));
    out.push_back(std::move(checker));
  }
  return out;
}

}  // namespace egca::cpp
