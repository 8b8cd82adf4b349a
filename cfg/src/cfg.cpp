// ProgramCfg::Build, lookups and the text dump.
#include "egca/cfg/cfg.h"

#include <fmt/format.h>

#include "builder.h"
#include "parser.h"

namespace egca::cfg {

const char* EdgeKindName(EdgeKind kind) {
  switch (kind) {
    case EdgeKind::kNormal:
      return "normal";
    case EdgeKind::kTrue:
      return "true";
    case EdgeKind::kFalse:
      return "false";
    case EdgeKind::kLoopBack:
      return "loop-back";
    case EdgeKind::kException:
      return "exception";
    case EdgeKind::kBreak:
      return "break";
    case EdgeKind::kContinue:
      return "continue";
    case EdgeKind::kReturn:
      return "return";
  }
  return "?";
}

const char* BlockKindName(BlockKind kind) {
  switch (kind) {
    case BlockKind::kEntry:
      return "entry";
    case BlockKind::kExit:
      return "exit";
    case BlockKind::kBasic:
      return "basic";
  }
  return "?";
}

const char* TerminatorName(Terminator t) {
  switch (t) {
    case Terminator::kNone:
      return "none";
    case Terminator::kIf:
      return "if";
    case Terminator::kWhile:
      return "while";
    case Terminator::kFor:
      return "for";
    case Terminator::kAsyncFor:
      return "async-for";
    case Terminator::kComprehensionFor:
      return "comp-for";
    case Terminator::kComprehensionIf:
      return "comp-if";
    case Terminator::kCaseTest:
      return "case";
    case Terminator::kExceptTest:
      return "except";
    case Terminator::kAssert:
      return "assert";
    case Terminator::kYield:
      return "yield";
    case Terminator::kReturn:
      return "return";
    case Terminator::kRaise:
      return "raise";
    case Terminator::kBreak:
      return "break";
    case Terminator::kContinue:
      return "continue";
    case Terminator::kFinallyExit:
      return "finally-exit";
  }
  return "?";
}

const char* StmtKindName(StmtKind kind) {
  switch (kind) {
    case StmtKind::kExpression:
      return "expr";
    case StmtKind::kDocstring:
      return "docstring";
    case StmtKind::kAssign:
      return "assign";
    case StmtKind::kAugAssign:
      return "augassign";
    case StmtKind::kAnnAssign:
      return "annassign";
    case StmtKind::kDelete:
      return "delete";
    case StmtKind::kPass:
      return "pass";
    case StmtKind::kImport:
      return "import";
    case StmtKind::kGlobal:
      return "global";
    case StmtKind::kNonlocal:
      return "nonlocal";
    case StmtKind::kAssert:
      return "assert";
    case StmtKind::kReturn:
      return "return";
    case StmtKind::kRaise:
      return "raise";
    case StmtKind::kBreak:
      return "break";
    case StmtKind::kContinue:
      return "continue";
    case StmtKind::kIf:
      return "if";
    case StmtKind::kElif:
      return "elif";
    case StmtKind::kWhile:
      return "while";
    case StmtKind::kFor:
      return "for";
    case StmtKind::kAsyncFor:
      return "async-for";
    case StmtKind::kWith:
      return "with";
    case StmtKind::kAsyncWith:
      return "async-with";
    case StmtKind::kTry:
      return "try";
    case StmtKind::kExcept:
      return "except";
    case StmtKind::kFinally:
      return "finally";
    case StmtKind::kMatch:
      return "match";
    case StmtKind::kCase:
      return "case";
    case StmtKind::kDecorator:
      return "decorator";
    case StmtKind::kFunctionDef:
      return "def";
    case StmtKind::kAsyncFunctionDef:
      return "async-def";
    case StmtKind::kClassDef:
      return "class";
    case StmtKind::kLambdaBody:
      return "lambda-body";
    case StmtKind::kComprehensionFor:
      return "comp-for";
    case StmtKind::kComprehensionIf:
      return "comp-if";
    case StmtKind::kComprehensionElement:
      return "comp-element";
    case StmtKind::kOther:
      return "other";
  }
  return "?";
}

const char* ScopeKindName(ScopeKind kind) {
  switch (kind) {
    case ScopeKind::kModule:
      return "module";
    case ScopeKind::kFunction:
      return "function";
    case ScopeKind::kLambda:
      return "lambda";
    case ScopeKind::kClass:
      return "class";
    case ScopeKind::kComprehension:
      return "comprehension";
  }
  return "?";
}

std::vector<Successor> FunctionCfg::Successors(BlockId id) const {
  std::vector<Successor> out;
  for (auto [it, end] = boost::out_edges(id, graph); it != end; ++it) {
    out.push_back(Successor{boost::target(*it, graph), graph[*it].kind});
  }
  return out;
}

std::vector<Successor> FunctionCfg::Predecessors(BlockId id) const {
  std::vector<Successor> out;
  for (auto [it, end] = boost::in_edges(id, graph); it != end; ++it) {
    out.push_back(Successor{boost::source(*it, graph), graph[*it].kind});
  }
  return out;
}

namespace {

// The first node that is ERROR or MISSING, in source order; only descends into subtrees
// that contain an error, and iteratively (error trees can be deep).
TSNode FirstErrorNode(TSNode root) {
  TSNode node = root;
  while (true) {
    uint32_t count = ts_node_child_count(node);
    bool descended = false;
    for (uint32_t i = 0; i < count; ++i) {
      TSNode c = ts_node_child(node, i);
      if (ts_node_is_missing(c) || Is(c, "ERROR")) return c;
      if (ts_node_has_error(c)) {
        node = c;
        descended = true;
        break;
      }
    }
    if (!descended) return node;
  }
}

std::string ErrorMessage(TSNode err, std::string_view source) {
  if (ts_node_is_missing(err)) return fmt::format("missing '{}'", NodeType(err));
  std::string_view text = NodeText(err, source);
  size_t nl = text.find('\n');
  if (nl != std::string_view::npos) text = text.substr(0, nl);
  if (text.size() > 40) text = text.substr(0, 40);
  while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) {
    text.remove_suffix(1);  // never cut a UTF-8 sequence in half
  }
  if (text.empty()) return "invalid syntax";
  return fmt::format("invalid syntax near '{}'", text);
}

// One line of statement text for dumps: the first source line, capped, printable.
std::string Snippet(std::string_view source, const SourceSpan& span) {
  if (span.end_byte > source.size() || span.begin_byte > span.end_byte) return "";
  std::string_view text = source.substr(span.begin_byte, span.end_byte - span.begin_byte);
  bool more = false;
  size_t nl = text.find('\n');
  if (nl != std::string_view::npos) {
    text = text.substr(0, nl);
    more = true;
  }
  constexpr size_t kMax = 60;
  if (text.size() > kMax) {
    size_t cut = kMax;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut);
    more = true;
  }
  std::string out;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7F) ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (more) out += " ...";
  return out;
}

}  // namespace

StatusOr<std::optional<SyntaxError>> ProgramCfg::CheckSyntax(std::string_view source,
                                                             const BuildOptions& options) {
  EGCA_ASSIGN_OR_RETURN(TsTreePtr tree, ParsePython(source, options.parse_timeout_micros));
  TSNode root = ts_tree_root_node(tree.get());
  if (!ts_node_has_error(root)) return std::optional<SyntaxError>();
  TSNode err = FirstErrorNode(root);
  LineIndex lines(source);
  return std::optional<SyntaxError>(
      SyntaxError{lines.SpanFromBytes(ts_node_start_byte(err), ts_node_end_byte(err)),
                  ErrorMessage(err, source)});
}

ProgramCfg ProgramCfg::FromScopes(std::string source, std::vector<FunctionCfg> scopes) {
  ProgramCfg out;
  out.source_ = std::move(source);
  out.scopes_ = std::move(scopes);
  return out;
}

StatusOr<ProgramCfg> ProgramCfg::Build(std::string_view source, const BuildOptions& options) {
  ProgramCfg program;
  program.source_ = std::string(source);
  EGCA_ASSIGN_OR_RETURN(TsTreePtr tree, ParsePython(program.source_, options.parse_timeout_micros));
  TSNode root = ts_tree_root_node(tree.get());
  if (ts_node_has_error(root)) {
    TSNode err = FirstErrorNode(root);
    LineIndex lines(program.source_);
    program.syntax_error_ =
        SyntaxError{lines.SpanFromBytes(ts_node_start_byte(err), ts_node_end_byte(err)),
                    ErrorMessage(err, program.source_)};
    return program;
  }
  CfgBuilder builder(program.source_, options, &program);
  EGCA_RETURN_IF_ERROR(builder.BuildProgram(root));
  return program;
}

int32_t ProgramCfg::FindScope(std::string_view code_name, int32_t first_line) const {
  for (size_t i = 0; i < scopes_.size(); ++i) {
    if (scopes_[i].name == code_name && scopes_[i].first_line == first_line) {
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

int32_t ProgramCfg::FindScopeByName(std::string_view name) const {
  for (size_t i = 0; i < scopes_.size(); ++i) {
    if (scopes_[i].name == name || scopes_[i].qualified_name == name) {
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

int32_t ProgramCfg::ScopeAt(uint32_t byte) const {
  int32_t best = scopes_.empty() ? -1 : 0;
  for (size_t i = 1; i < scopes_.size(); ++i) {
    const SourceSpan& s = scopes_[i].span;
    // Scopes nest and come in source order, so the last one containing `byte` is innermost.
    if (s.Contains(byte)) best = static_cast<int32_t>(i);
  }
  return best;
}

std::string ProgramCfg::DumpScope(int32_t index) const {
  const FunctionCfg& f = scopes_.at(index);
  std::string out =
      fmt::format("scope {} {} kind={} qualname={} first_line={} span={}", index, f.name,
                  ScopeKindName(f.kind), f.qualified_name, f.first_line, f.span.ToString());
  if (f.parent >= 0) out += fmt::format(" parent={}", f.parent);
  if (f.is_generator) out += " generator";
  if (f.is_async) out += " async";
  out += "\n";
  for (BlockId b = 0; b < f.block_count(); ++b) {
    const BasicBlock& bb = f.block(b);
    out += fmt::format("  B{}", bb.id);
    if (bb.kind != BlockKind::kBasic) {
      out += fmt::format(" {}", BlockKindName(bb.kind));
    } else {
      out += fmt::format(" [{}] depth={}", bb.span.ToString(), bb.loop_depth);
    }
    if (bb.terminator != Terminator::kNone) {
      out += fmt::format(" term={}", TerminatorName(bb.terminator));
    }
    out += "\n";
    for (const Statement& s : bb.statements) {
      out += fmt::format("    {} {}", s.span.ToString(), StmtKindName(s.kind));
      if (s.contains_yield) out += " yield";
      if (s.contains_await) out += " await";
      if (!s.child_scopes.empty()) {
        out += " scopes=";
        for (size_t i = 0; i < s.child_scopes.size(); ++i) {
          out += fmt::format("{}{}", i ? "," : "", s.child_scopes[i]);
        }
      }
      out += fmt::format(" | {}\n", Snippet(source_, s.span));
    }
    std::vector<Successor> succ = f.Successors(b);
    if (!succ.empty()) {
      out += "    ->";
      for (const Successor& s : succ) {
        out += fmt::format(" B{}:{}", s.block, EdgeKindName(s.kind));
      }
      out += "\n";
    }
  }
  return out;
}

std::string ProgramCfg::Dump() const {
  if (syntax_error_) {
    return fmt::format("syntax error at {}: {}\n", syntax_error_->span.ToString(),
                       syntax_error_->message);
  }
  std::string out;
  for (const Unsupported& u : unsupported_) {
    out += fmt::format("unsupported at {}: {}\n", u.span.ToString(), u.what);
  }
  for (size_t i = 0; i < scopes_.size(); ++i) out += DumpScope(static_cast<int32_t>(i));
  return out;
}

}  // namespace egca::cfg
