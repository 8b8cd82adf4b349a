#include "builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "parser.h"

namespace egca::cfg {
namespace {

TSNode Field(TSNode n, const char* name) {
  return ts_node_child_by_field_name(n, name, static_cast<uint32_t>(strlen(name)));
}

bool HasChildToken(TSNode n, std::string_view type) {
  uint32_t count = ts_node_child_count(n);
  for (uint32_t i = 0; i < count; ++i) {
    TSNode c = ts_node_child(n, i);
    if (!ts_node_is_named(c) && NodeType(c) == type) return true;
  }
  return false;
}

std::vector<TSNode> NamedChildren(TSNode n) {
  std::vector<TSNode> out;
  uint32_t count = ts_node_named_child_count(n);
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) out.push_back(ts_node_named_child(n, i));
  return out;
}

bool IsComprehension(std::string_view type) {
  return type == "list_comprehension" || type == "set_comprehension" ||
         type == "dictionary_comprehension" || type == "generator_expression";
}

const char* ComprehensionName(std::string_view type) {
  if (type == "list_comprehension") return "<listcomp>";
  if (type == "set_comprehension") return "<setcomp>";
  if (type == "dictionary_comprehension") return "<dictcomp>";
  return "<genexpr>";
}

bool IsDocstringNode(TSNode stmt) {
  if (!Is(stmt, "expression_statement") || ts_node_named_child_count(stmt) != 1) return false;
  TSNode e = ts_node_named_child(stmt, 0);
  return Is(e, "string") || Is(e, "concatenated_string");
}

int32_t StartLine(TSNode n) { return static_cast<int32_t>(ts_node_start_point(n).row) + 1; }

}  // namespace

CfgBuilder::CfgBuilder(std::string_view source, const BuildOptions& options, ProgramCfg* out)
    : source_(source), lines_(source), options_(options), out_(out) {}

// ---- Errors ---------------------------------------------------------------------------

void CfgBuilder::SetSyntaxError(TSNode node, std::string message) {
  if (syntax_error_) return;
  syntax_error_ =
      SyntaxError{Span(ts_node_start_byte(node), ts_node_end_byte(node)), std::move(message)};
}

void CfgBuilder::AddUnsupported(TSNode node, std::string what) {
  out_->unsupported_.push_back(
      Unsupported{Span(ts_node_start_byte(node), ts_node_end_byte(node)), std::move(what)});
}

bool CfgBuilder::EnterNesting(TSNode node) {
  if (++nesting_ > options_.max_nesting_depth) {
    if (status_.ok()) {
      status_ = Unimplemented(fmt::format(
          "line {}: nesting deeper than {} blocks/scopes (BuildOptions::max_nesting_depth)",
          StartLine(node), options_.max_nesting_depth));
    }
    return false;
  }
  return true;
}

// ---- Blocks and edges -----------------------------------------------------------------

int CfgBuilder::NewBlock(BlockKind kind) {
  scope_->blocks.push_back(RawBlock{kind, Terminator::kNone, {}, false});
  return static_cast<int>(scope_->blocks.size()) - 1;
}

int CfgBuilder::Current() {
  if (scope_->current < 0) scope_->current = NewBlock();  // unreachable code: no preds
  return scope_->current;
}

void CfgBuilder::AddEdge(int from, int to, EdgeKind kind) {
  if (from < 0 || to < 0) return;
  scope_->edges.push_back(RawEdge{from, to, kind});
}

int CfgBuilder::StartBlock() {
  int b = NewBlock();
  if (scope_->current >= 0) AddEdge(scope_->current, b, EdgeKind::kNormal);
  scope_->current = b;
  return b;
}

void CfgBuilder::Terminate(int block, Terminator t) { scope_->blocks[block].terminator = t; }

bool CfgBuilder::InLoop() const {
  for (const Frame& f : scope_->frames) {
    if (f.type == Frame::Type::kLoop) return true;
  }
  return false;
}

void CfgBuilder::Append(Statement stmt, bool may_raise) {
  int b = Current();
  scope_->blocks[b].statements.push_back(std::move(stmt));
  if (!may_raise || scope_->blocks[b].exception_routed) return;
  // Only a statement inside a try (or protected by a finally) gets an exception edge.
  for (auto it = scope_->frames.rbegin(); it != scope_->frames.rend(); ++it) {
    if (it->type == Frame::Type::kLoop) continue;
    scope_->blocks[b].exception_routed = true;
    Jump(b, EdgeKind::kException);
    return;
  }
}

void CfgBuilder::Jump(int from, EdgeKind route, EdgeKind edge_kind) {
  auto& frames = scope_->frames;
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    Frame& f = *it;
    if (f.type == Frame::Type::kFinally) {
      // Every way out of the protected region runs the finally body first.
      AddEdge(from, f.target, edge_kind);
      if (std::find(f.pending.begin(), f.pending.end(), route) == f.pending.end()) {
        f.pending.push_back(route);
      }
      return;
    }
    if (f.type == Frame::Type::kHandler && route == EdgeKind::kException) {
      AddEdge(from, f.target, edge_kind);
      return;
    }
    if (f.type == Frame::Type::kLoop && route == EdgeKind::kBreak) {
      AddEdge(from, f.after, edge_kind);
      return;
    }
    if (f.type == Frame::Type::kLoop && route == EdgeKind::kContinue) {
      AddEdge(from, f.target, edge_kind);
      return;
    }
  }
  AddEdge(from, scope_->exit, edge_kind);  // return / uncaught exception
}

// ---- Statements -----------------------------------------------------------------------

Statement CfgBuilder::MakeStatement(StmtKind kind, uint32_t begin, uint32_t end) const {
  Statement s;
  s.kind = kind;
  s.span = Span(begin, end);
  s.loop_depth = scope_->loop_depth;
  return s;
}

Statement CfgBuilder::MakeStatement(StmtKind kind, TSNode node) const {
  return MakeStatement(kind, ts_node_start_byte(node), ts_node_end_byte(node));
}

uint32_t CfgBuilder::HeaderEnd(TSNode node, TSNode body) const {
  uint32_t end = ts_node_start_byte(node);
  uint32_t count = ts_node_child_count(node);
  for (uint32_t i = 0; i < count; ++i) {
    TSNode c = ts_node_child(node, i);
    if (!ts_node_is_null(body) && ts_node_eq(c, body)) break;
    if (Is(c, "comment")) continue;
    end = ts_node_end_byte(c);
  }
  return end;
}

void CfgBuilder::Scan(TSNode root, Statement* stmt) {
  if (ts_node_is_null(root)) return;
  // Explicit stack: expressions can nest far deeper than statements.
  std::vector<TSNode> stack{root};
  std::vector<TSNode> found;  // nested scopes, built after the walk in source order
  while (!stack.empty()) {
    TSNode n = stack.back();
    stack.pop_back();
    std::string_view type = NodeType(n);
    if (type == "lambda" || IsComprehension(type)) {
      found.push_back(n);
      continue;
    }
    if (type == "yield") stmt->contains_yield = true;
    if (type == "await") stmt->contains_await = true;
    uint32_t count = ts_node_named_child_count(n);
    for (uint32_t i = count; i > 0; --i) stack.push_back(ts_node_named_child(n, i - 1));
  }
  std::sort(found.begin(), found.end(),
            [](TSNode a, TSNode b) { return ts_node_start_byte(a) < ts_node_start_byte(b); });
  for (TSNode n : found) {
    if (Failed()) return;
    if (!EnterNesting(n)) return;
    int32_t before = static_cast<int32_t>(out_->scopes_.size());
    if (Is(n, "lambda")) {
      VisitLambda(n);
    } else {
      VisitComprehension(n);
    }
    stmt->child_scopes.push_back(before);
    if (!Is(n, "lambda")) {
      // The outermost iterable is evaluated in the enclosing scope (it is the argument of
      // the comprehension's code object), so what it contains belongs to this statement.
      for (TSNode c : NamedChildren(n)) {
        if (Is(c, "for_in_clause")) {
          Scan(Field(c, "right"), stmt);
          break;
        }
      }
    }
    LeaveNesting();
  }
}

std::optional<std::string_view> CfgBuilder::LineIndent(uint32_t byte) const {
  uint32_t begin = byte;
  while (begin > 0 && source_[begin - 1] != '\n') --begin;
  std::string_view prefix = source_.substr(begin, byte - begin);
  for (char c : prefix) {
    // Not first on its line ("x = 1; y = 2", "if c: return"), or after a form feed.
    if (c != ' ' && c != '\t') return std::nullopt;
  }
  return prefix;
}

void CfgBuilder::VisitBody(TSNode block, bool allow_docstring) {
  std::vector<TSNode> stmts = NamedChildren(block);
  bool first = true;
  // __future__ imports must come first (after the module docstring); CPython refuses others.
  bool future_allowed = scope_->kind == ScopeKind::kModule;
  // tree-sitter is lenient about indentation where CPython's tokenizer is not: every
  // statement that starts a line must be indented exactly like the block's first one, and
  // module-level statements not at all.
  std::optional<std::string_view> indent;
  if (Is(block, "module")) indent = std::string_view();
  for (TSNode s : stmts) {
    if (Failed()) return;
    if (Is(s, "comment")) continue;
    std::optional<std::string_view> own = LineIndent(ts_node_start_byte(s));
    if (own) {
      if (!indent && first) indent = own;
      if (indent && *own != *indent) {
        SetSyntaxError(s, own->size() > indent->size()
                              ? "unexpected indent"
                              : "unindent does not match any outer indentation level");
        return;
      }
    }
    if (Is(s, "future_import_statement")) {
      if (!future_allowed) {
        SetSyntaxError(s, "from __future__ imports must occur at the beginning of the file");
        return;
      }
    } else if (!(first && allow_docstring && IsDocstringNode(s))) {
      future_allowed = false;
    }
    VisitStatement(s, first, allow_docstring);
    first = false;
  }
  if (first && !Failed()) {
    // tree-sitter accepts a header with no body at the end of the input (a truncated
    // completion); CPython does not.
    TSNode parent = ts_node_parent(block);
    if (!Is(block, "module")) {
      SetSyntaxError(ts_node_is_null(parent) ? block : parent, "expected an indented block");
    }
  }
}

void CfgBuilder::VisitStatement(TSNode node, bool first_in_body, bool allow_docstring) {
  if (!EnterNesting(node)) return;
  std::string_view t = NodeType(node);
  if (t == "expression_statement") {
    VisitExpressionStatement(node, first_in_body && allow_docstring && IsDocstringNode(node));
  } else if (t == "return_statement") {
    VisitReturn(node);
  } else if (t == "raise_statement") {
    VisitRaise(node);
  } else if (t == "assert_statement") {
    VisitAssert(node);
  } else if (t == "break_statement") {
    VisitBreak(node);
  } else if (t == "continue_statement") {
    VisitContinue(node);
  } else if (t == "pass_statement") {
    VisitSimple(node, StmtKind::kPass);
  } else if (t == "delete_statement") {
    VisitSimple(node, StmtKind::kDelete);
  } else if (t == "import_statement" || t == "import_from_statement" ||
             t == "future_import_statement") {
    VisitSimple(node, StmtKind::kImport);
  } else if (t == "global_statement") {
    VisitGlobal(node, StmtKind::kGlobal);
  } else if (t == "nonlocal_statement") {
    VisitGlobal(node, StmtKind::kNonlocal);
  } else if (t == "if_statement") {
    VisitIf(node);
  } else if (t == "while_statement") {
    VisitWhile(node);
  } else if (t == "for_statement") {
    VisitFor(node);
  } else if (t == "try_statement") {
    VisitTry(node);
  } else if (t == "with_statement") {
    VisitWith(node);
  } else if (t == "match_statement") {
    VisitMatch(node);
  } else if (t == "decorated_definition") {
    VisitDecorated(node);
  } else if (t == "function_definition") {
    VisitFunctionDef(node, StartLine(node));
  } else if (t == "class_definition") {
    VisitClassDef(node, StartLine(node));
  } else if (t == "print_statement") {
    SetSyntaxError(node, "Python 2 print statement (missing parentheses in call to 'print')");
  } else if (t == "exec_statement") {
    SetSyntaxError(node, "Python 2 exec statement");
  } else {
    // type_alias_statement (3.12) and anything newer than this builder.
    AddUnsupported(node, fmt::format("statement kind '{}' (not Python 3.11)", t));
    VisitSimple(node, StmtKind::kOther);
  }
  LeaveNesting();
}

void CfgBuilder::VisitExpressionStatement(TSNode node, bool docstring) {
  StmtKind kind = StmtKind::kExpression;
  if (docstring) {
    kind = StmtKind::kDocstring;
  } else if (ts_node_named_child_count(node) == 1) {
    TSNode e = ts_node_named_child(node, 0);
    if (Is(e, "assignment")) {
      kind = ts_node_is_null(Field(e, "type")) ? StmtKind::kAssign : StmtKind::kAnnAssign;
    } else if (Is(e, "augmented_assignment")) {
      kind = StmtKind::kAugAssign;
    }
  }
  Statement s = MakeStatement(kind, node);
  Scan(node, &s);
  if (Failed()) return;
  bool yields = s.contains_yield;
  if (yields) {
    if (scope_->kind != ScopeKind::kFunction) {
      SetSyntaxError(node, "'yield' outside function");
      return;
    }
    scope_->is_generator = true;
  }
  if (s.contains_await &&
      (scope_->kind == ScopeKind::kModule || scope_->kind == ScopeKind::kClass ||
       (scope_->kind == ScopeKind::kFunction && !scope_->is_async))) {
    SetSyntaxError(node, "'await' outside async function");
    return;
  }
  Append(std::move(s), kind != StmtKind::kDocstring);
  if (yields) {
    // A yield suspends: resumption starts a new block, and close()/throw() raise here.
    int b = Current();
    Terminate(b, Terminator::kYield);
    int next = NewBlock();
    AddEdge(b, next, EdgeKind::kNormal);
    if (!scope_->blocks[b].exception_routed) Jump(b, EdgeKind::kException);
    scope_->current = next;
  }
}

void CfgBuilder::VisitSimple(TSNode node, StmtKind kind) {
  Statement s = MakeStatement(kind, node);
  Scan(node, &s);
  if (Failed()) return;
  Append(std::move(s), kind != StmtKind::kPass);
}

void CfgBuilder::VisitGlobal(TSNode node, StmtKind kind) {
  if (kind == StmtKind::kNonlocal && scope_->kind == ScopeKind::kModule) {
    SetSyntaxError(node, "nonlocal declaration not allowed at module level");
    return;
  }
  Append(MakeStatement(kind, node), false);
}

void CfgBuilder::VisitReturn(TSNode node) {
  if (scope_->kind != ScopeKind::kFunction) {
    SetSyntaxError(node, "'return' outside function");
    return;
  }
  Statement s = MakeStatement(StmtKind::kReturn, node);
  Scan(node, &s);
  if (Failed()) return;
  if (s.contains_yield) scope_->is_generator = true;
  Append(std::move(s));
  int b = Current();
  Terminate(b, Terminator::kReturn);
  Jump(b, EdgeKind::kReturn);
  scope_->current = -1;
}

void CfgBuilder::VisitRaise(TSNode node) {
  Statement s = MakeStatement(StmtKind::kRaise, node);
  Scan(node, &s);
  if (Failed()) return;
  // The raise's own edge is its terminator edge; no separate "may raise" edge.
  int b = Current();
  scope_->blocks[b].statements.push_back(std::move(s));
  Terminate(b, Terminator::kRaise);
  if (!scope_->blocks[b].exception_routed) {
    scope_->blocks[b].exception_routed = true;
    Jump(b, EdgeKind::kException);
  }
  scope_->current = -1;
}

void CfgBuilder::VisitAssert(TSNode node) {
  Statement s = MakeStatement(StmtKind::kAssert, node);
  Scan(node, &s);
  if (Failed()) return;
  int b = Current();
  scope_->blocks[b].statements.push_back(std::move(s));
  Terminate(b, Terminator::kAssert);
  int next = NewBlock();
  AddEdge(b, next, EdgeKind::kTrue);
  if (!scope_->blocks[b].exception_routed) {
    scope_->blocks[b].exception_routed = true;
    Jump(b, EdgeKind::kException);
  }
  scope_->current = next;
}

void CfgBuilder::VisitBreak(TSNode node) {
  if (!InLoop()) {
    SetSyntaxError(node, "'break' outside loop");
    return;
  }
  Append(MakeStatement(StmtKind::kBreak, node), false);
  int b = Current();
  Terminate(b, Terminator::kBreak);
  Jump(b, EdgeKind::kBreak);
  scope_->current = -1;
}

void CfgBuilder::VisitContinue(TSNode node) {
  if (!InLoop()) {
    SetSyntaxError(node, "'continue' not properly in loop");
    return;
  }
  Append(MakeStatement(StmtKind::kContinue, node), false);
  int b = Current();
  Terminate(b, Terminator::kContinue);
  Jump(b, EdgeKind::kContinue);
  scope_->current = -1;
}

void CfgBuilder::VisitIf(TSNode node) {
  TSNode consequence = Field(node, "consequence");
  Statement s =
      MakeStatement(StmtKind::kIf, ts_node_start_byte(node), HeaderEnd(node, consequence));
  Scan(Field(node, "condition"), &s);
  if (Failed()) return;
  Append(std::move(s));
  int cond = Current();
  Terminate(cond, Terminator::kIf);
  int after = NewBlock();

  int body = NewBlock();
  AddEdge(cond, body, EdgeKind::kTrue);
  scope_->current = body;
  VisitBody(consequence, false);
  AddEdge(scope_->current, after, EdgeKind::kNormal);

  int pending_false = cond;  // the condition block whose false edge is still open
  uint32_t count = ts_node_child_count(node);
  for (uint32_t i = 0; i < count && !Failed(); ++i) {
    TSNode alt = ts_node_child(node, i);
    if (Is(alt, "elif_clause")) {
      TSNode cons = Field(alt, "consequence");
      int test = NewBlock();
      AddEdge(pending_false, test, EdgeKind::kFalse);
      scope_->current = test;
      Statement e = MakeStatement(StmtKind::kElif, ts_node_start_byte(alt), HeaderEnd(alt, cons));
      Scan(Field(alt, "condition"), &e);
      if (Failed()) return;
      Append(std::move(e));
      test = Current();
      Terminate(test, Terminator::kIf);
      int b = NewBlock();
      AddEdge(test, b, EdgeKind::kTrue);
      scope_->current = b;
      VisitBody(cons, false);
      AddEdge(scope_->current, after, EdgeKind::kNormal);
      pending_false = test;
    } else if (Is(alt, "else_clause")) {
      int b = NewBlock();
      AddEdge(pending_false, b, EdgeKind::kFalse);
      scope_->current = b;
      VisitBody(Field(alt, "body"), false);
      AddEdge(scope_->current, after, EdgeKind::kNormal);
      pending_false = -1;
    }
  }
  if (pending_false >= 0) AddEdge(pending_false, after, EdgeKind::kFalse);
  scope_->current = after;
}

void CfgBuilder::VisitWhile(TSNode node) {
  TSNode body = Field(node, "body");
  int header = StartBlock();
  Statement s = MakeStatement(StmtKind::kWhile, ts_node_start_byte(node), HeaderEnd(node, body));
  Scan(Field(node, "condition"), &s);
  if (Failed()) return;
  Append(std::move(s));
  Terminate(header, Terminator::kWhile);
  FinishLoop(node, body, header);
}

void CfgBuilder::VisitFor(TSNode node) {
  TSNode body = Field(node, "body");
  bool is_async = HasChildToken(node, "async");
  int header = StartBlock();
  Statement s = MakeStatement(is_async ? StmtKind::kAsyncFor : StmtKind::kFor,
                              ts_node_start_byte(node), HeaderEnd(node, body));
  Scan(Field(node, "left"), &s);
  Scan(Field(node, "right"), &s);
  if (Failed()) return;
  Append(std::move(s));
  Terminate(header, is_async ? Terminator::kAsyncFor : Terminator::kFor);
  FinishLoop(node, body, header);
}

// Shared by while and for once the header block is terminated: body on the true edge with a
// loop-back, the optional else on the false edge, both joining the block after the loop.
void CfgBuilder::FinishLoop(TSNode node, TSNode body, int header) {
  int after = NewBlock();

  scope_->frames.push_back(Frame{Frame::Type::kLoop, header, after, {}});
  ++scope_->loop_depth;
  int b = NewBlock();
  AddEdge(header, b, EdgeKind::kTrue);
  scope_->current = b;
  VisitBody(body, false);
  AddEdge(scope_->current, header, EdgeKind::kLoopBack);
  --scope_->loop_depth;
  scope_->frames.pop_back();

  TSNode alt = Field(node, "alternative");
  if (!ts_node_is_null(alt)) {
    int e = NewBlock();
    AddEdge(header, e, EdgeKind::kFalse);
    scope_->current = e;
    VisitBody(Field(alt, "body"), false);
    AddEdge(scope_->current, after, EdgeKind::kNormal);
  } else {
    AddEdge(header, after, EdgeKind::kFalse);
  }
  scope_->current = after;
}

void CfgBuilder::VisitTry(TSNode node) {
  TSNode body = Field(node, "body");
  std::vector<TSNode> handlers;
  TSNode else_clause{}, finally_clause{};
  bool has_else = false, has_finally = false;
  for (TSNode c : NamedChildren(node)) {
    if (Is(c, "except_clause") || Is(c, "except_group_clause")) handlers.push_back(c);
    if (Is(c, "else_clause")) {
      else_clause = c;
      has_else = true;
    }
    if (Is(c, "finally_clause")) {
      finally_clause = c;
      has_finally = true;
    }
  }
  Append(MakeStatement(StmtKind::kTry, ts_node_start_byte(node), HeaderEnd(node, body)), false);
  int after = NewBlock();
  int fin = -1;
  if (has_finally) {
    fin = NewBlock();
    scope_->frames.push_back(Frame{Frame::Type::kFinally, fin, -1, {}});
  }
  int dispatch = -1;
  if (!handlers.empty()) {
    dispatch = NewBlock();
    scope_->frames.push_back(Frame{Frame::Type::kHandler, dispatch, -1, {}});
  }
  StartBlock();
  VisitBody(body, false);
  if (Failed()) return;
  if (!handlers.empty()) scope_->frames.pop_back();

  // Normal completion of the body: else clause (not protected by the handlers), then the
  // finally body or the code after the try.
  int normal_target = has_finally ? fin : after;
  if (has_else && scope_->current >= 0) {
    StartBlock();
    VisitBody(Field(else_clause, "body"), false);
    if (Failed()) return;
  }
  AddEdge(scope_->current, normal_target, EdgeKind::kNormal);

  int test = dispatch;
  for (size_t i = 0; i < handlers.size() && !Failed(); ++i) {
    TSNode h = handlers[i];
    TSNode block{};
    bool bare = true;
    for (TSNode c : NamedChildren(h)) {
      if (Is(c, "block")) {
        block = c;
      } else if (!Is(c, "comment")) {
        bare = false;
      }
    }
    scope_->current = test;
    Statement s = MakeStatement(StmtKind::kExcept, ts_node_start_byte(h), HeaderEnd(h, block));
    Scan(Field(h, "value"), &s);
    if (Failed()) return;
    Append(std::move(s), false);
    Terminate(test, Terminator::kExceptTest);
    int hb = NewBlock();
    AddEdge(test, hb, EdgeKind::kTrue);
    int next = -1;
    if (!bare) {
      if (i + 1 < handlers.size()) {
        next = NewBlock();
        AddEdge(test, next, EdgeKind::kFalse);
      } else {
        Jump(test, EdgeKind::kException, EdgeKind::kFalse);  // no clause matched: re-raise
      }
    } else if (i + 1 < handlers.size()) {
      SetSyntaxError(h, "default 'except:' must be last");
      return;
    }
    scope_->current = hb;
    if (!ts_node_is_null(block)) VisitBody(block, false);
    AddEdge(scope_->current, normal_target, EdgeKind::kNormal);
    test = next;
  }
  if (Failed()) return;

  if (has_finally) {
    std::vector<EdgeKind> pending = std::move(scope_->frames.back().pending);
    scope_->frames.pop_back();
    bool reached_normally = false;
    for (const RawEdge& e : scope_->edges) {
      if (e.to == fin && e.kind == EdgeKind::kNormal) reached_normally = true;
    }
    TSNode fbody{};
    for (TSNode c : NamedChildren(finally_clause)) {
      if (Is(c, "block")) fbody = c;
    }
    scope_->current = fin;
    Append(MakeStatement(StmtKind::kFinally, ts_node_start_byte(finally_clause),
                         HeaderEnd(finally_clause, fbody)),
           false);
    if (!ts_node_is_null(fbody)) VisitBody(fbody, false);
    if (Failed()) return;
    int end = scope_->current;
    if (end >= 0) {
      if (!pending.empty()) Terminate(end, Terminator::kFinallyExit);
      if (reached_normally) AddEdge(end, after, EdgeKind::kNormal);
      for (EdgeKind k : pending) Jump(end, k);
    }
  }
  scope_->current = after;
}

void CfgBuilder::VisitWith(TSNode node) {
  TSNode body = Field(node, "body");
  bool is_async = HasChildToken(node, "async");
  Statement s = MakeStatement(is_async ? StmtKind::kAsyncWith : StmtKind::kWith,
                              ts_node_start_byte(node), HeaderEnd(node, body));
  for (TSNode c : NamedChildren(node)) {
    if (Is(c, "with_clause")) Scan(c, &s);
  }
  if (Failed()) return;
  Append(std::move(s));
  VisitBody(body, false);
}

void CfgBuilder::VisitMatch(TSNode node) {
  TSNode body = Field(node, "body");
  Statement s = MakeStatement(StmtKind::kMatch, ts_node_start_byte(node), HeaderEnd(node, body));
  Scan(Field(node, "subject"), &s);
  if (Failed()) return;
  Append(std::move(s));
  int prev = Current();
  EdgeKind prev_kind = EdgeKind::kNormal;
  int after = NewBlock();
  for (TSNode c : NamedChildren(body)) {
    if (Failed()) return;
    if (!Is(c, "case_clause")) continue;
    TSNode cons = Field(c, "consequence");
    int test = NewBlock();
    AddEdge(prev, test, prev_kind);
    scope_->current = test;
    Statement cs = MakeStatement(StmtKind::kCase, ts_node_start_byte(c), HeaderEnd(c, cons));
    Scan(Field(c, "guard"), &cs);
    if (Failed()) return;
    Append(std::move(cs));
    Terminate(test, Terminator::kCaseTest);
    int b = NewBlock();
    AddEdge(test, b, EdgeKind::kTrue);
    scope_->current = b;
    VisitBody(cons, false);
    AddEdge(scope_->current, after, EdgeKind::kNormal);
    prev = test;
    prev_kind = EdgeKind::kFalse;
  }
  AddEdge(prev, after, prev_kind);
  scope_->current = after;
}

void CfgBuilder::VisitDecorated(TSNode node) {
  TSNode def = Field(node, "definition");
  for (TSNode c : NamedChildren(node)) {
    if (!Is(c, "decorator")) continue;
    Statement s = MakeStatement(StmtKind::kDecorator, c);
    Scan(c, &s);
    if (Failed()) return;
    Append(std::move(s));
  }
  if (ts_node_is_null(def)) return;
  if (Is(def, "function_definition")) {
    VisitFunctionDef(def, StartLine(node));
  } else {
    VisitClassDef(def, StartLine(node));
  }
}

void CfgBuilder::VisitFunctionDef(TSNode node, int32_t first_line) {
  TSNode body = Field(node, "body");
  bool is_async = HasChildToken(node, "async");
  if (!ts_node_is_null(Field(node, "type_parameters"))) {
    AddUnsupported(Field(node, "type_parameters"), "type parameters (Python 3.12)");
  }
  uint32_t header_end = HeaderEnd(node, body);
  std::string name(NodeText(Field(node, "name"), source_));
  Statement s = MakeStatement(is_async ? StmtKind::kAsyncFunctionDef : StmtKind::kFunctionDef,
                              ts_node_start_byte(node), header_end);
  int32_t index = ReserveScope(ScopeKind::kFunction, name, node,
                               Span(ts_node_start_byte(node), header_end), first_line);
  out_->scopes_[index].is_async = is_async;
  s.child_scopes.push_back(index);
  // Defaults and annotations are evaluated in the enclosing scope.
  Scan(Field(node, "parameters"), &s);
  Scan(Field(node, "return_type"), &s);
  if (Failed()) return;
  Append(std::move(s));
  BuildScope(index, node);
}

void CfgBuilder::VisitClassDef(TSNode node, int32_t first_line) {
  TSNode body = Field(node, "body");
  if (!ts_node_is_null(Field(node, "type_parameters"))) {
    AddUnsupported(Field(node, "type_parameters"), "type parameters (Python 3.12)");
  }
  uint32_t header_end = HeaderEnd(node, body);
  std::string name(NodeText(Field(node, "name"), source_));
  Statement s = MakeStatement(StmtKind::kClassDef, ts_node_start_byte(node), header_end);
  int32_t index = ReserveScope(ScopeKind::kClass, name, node,
                               Span(ts_node_start_byte(node), header_end), first_line);
  s.child_scopes.push_back(index);
  Scan(Field(node, "superclasses"), &s);
  if (Failed()) return;
  Append(std::move(s));
  BuildScope(index, node);
}

void CfgBuilder::VisitLambda(TSNode node) {
  int32_t index =
      ReserveScope(ScopeKind::kLambda, "<lambda>", node,
                   Span(ts_node_start_byte(node), ts_node_end_byte(node)), StartLine(node));
  BuildScope(index, node);
}

void CfgBuilder::VisitComprehension(TSNode node) {
  int32_t index =
      ReserveScope(ScopeKind::kComprehension, ComprehensionName(NodeType(node)), node,
                   Span(ts_node_start_byte(node), ts_node_end_byte(node)), StartLine(node));
  out_->scopes_[index].is_generator = Is(node, "generator_expression");
  BuildScope(index, node);
}

// ---- Scopes ---------------------------------------------------------------------------

int32_t CfgBuilder::ReserveScope(ScopeKind kind, std::string name, TSNode node, SourceSpan header,
                                 int32_t first_line) {
  FunctionCfg f;
  f.kind = kind;
  f.parent = scope_ ? scope_->index : -1;
  if (f.parent >= 0) {
    const FunctionCfg& p = out_->scopes_[f.parent];
    if (p.kind == ScopeKind::kModule) {
      f.qualified_name = name;
    } else if (p.kind == ScopeKind::kClass || p.kind == ScopeKind::kComprehension) {
      // CPython adds "<locals>" only below functions and lambdas.
      f.qualified_name = p.qualified_name + "." + name;
    } else {
      f.qualified_name = p.qualified_name + ".<locals>." + name;
    }
  } else {
    f.qualified_name = name;
  }
  f.name = std::move(name);
  f.first_line = first_line;
  f.span = Span(ts_node_start_byte(node), ts_node_end_byte(node));
  f.header_span = header;
  out_->scopes_.push_back(std::move(f));
  return static_cast<int32_t>(out_->scopes_.size()) - 1;
}

void CfgBuilder::BuildScope(int32_t index, TSNode node) {
  ScopeState state;
  state.index = index;
  state.kind = out_->scopes_[index].kind;
  state.is_async = out_->scopes_[index].is_async;
  ScopeState* saved = scope_;
  int32_t saved_nesting = nesting_;
  scope_ = &state;
  state.entry = NewBlock(BlockKind::kEntry);
  state.exit = NewBlock(BlockKind::kExit);
  state.current = state.entry;
  StartBlock();

  switch (state.kind) {
    case ScopeKind::kModule:
      VisitBody(node, true);
      break;
    case ScopeKind::kFunction:
    case ScopeKind::kClass:
      VisitBody(Field(node, "body"), true);
      break;
    case ScopeKind::kLambda: {
      TSNode body = Field(node, "body");
      Statement s = MakeStatement(StmtKind::kLambdaBody, ts_node_is_null(body) ? node : body);
      Scan(body, &s);
      if (s.contains_yield) state.is_generator = true;
      Append(std::move(s));
      int b = Current();
      Terminate(b, Terminator::kReturn);
      AddEdge(b, state.exit, EdgeKind::kReturn);
      state.current = -1;
      break;
    }
    case ScopeKind::kComprehension: {
      // Clauses in order: each "for" is a loop header nested in the previous one; each
      // "if" filters (false: back to the innermost header); the element ends an iteration.
      std::vector<int> headers;
      int prev = state.current;
      EdgeKind prev_kind = EdgeKind::kNormal;
      int open_filter = -1;  // "if" block whose false edge follows its true edge
      auto link = [&](int to) {
        AddEdge(prev, to, prev_kind);
        if (open_filter >= 0) {
          AddEdge(open_filter, headers.back(), EdgeKind::kLoopBack);
          open_filter = -1;
        }
      };
      bool first_for = true;
      for (TSNode c : NamedChildren(node)) {
        if (Failed()) break;
        if (Is(c, "for_in_clause")) {
          int h = NewBlock();
          link(h);
          state.current = h;
          bool is_async = HasChildToken(c, "async");
          Statement s = MakeStatement(StmtKind::kComprehensionFor, c);
          // The first iterable is the parent's business (see VisitComprehension).
          Scan(Field(c, "left"), &s);
          if (!first_for) Scan(Field(c, "right"), &s);
          if (is_async) s.contains_await = true;
          Append(std::move(s));
          Terminate(h, Terminator::kComprehensionFor);
          ++state.loop_depth;
          headers.push_back(h);
          prev = h;
          prev_kind = EdgeKind::kTrue;
          first_for = false;
        } else if (Is(c, "if_clause")) {
          if (headers.empty()) continue;
          int f = NewBlock();
          link(f);
          state.current = f;
          Statement s = MakeStatement(StmtKind::kComprehensionIf, c);
          Scan(c, &s);
          Append(std::move(s));
          Terminate(f, Terminator::kComprehensionIf);
          prev = f;
          prev_kind = EdgeKind::kTrue;
          open_filter = f;
        }
      }
      if (Failed() || headers.empty()) break;
      TSNode body = Field(node, "body");
      int e = NewBlock();
      link(e);
      state.current = e;
      Statement s =
          MakeStatement(StmtKind::kComprehensionElement, ts_node_is_null(body) ? node : body);
      Scan(body, &s);
      if (state.is_generator || Is(node, "generator_expression")) {
        s.contains_yield = Is(node, "generator_expression");
        state.is_generator = true;
      }
      Append(std::move(s));
      AddEdge(e, headers.back(), EdgeKind::kLoopBack);
      for (size_t i = headers.size(); i > 0; --i) {
        AddEdge(headers[i - 1], i > 1 ? headers[i - 2] : state.exit, EdgeKind::kFalse);
      }
      state.current = -1;
      break;
    }
  }
  if (state.current >= 0) AddEdge(state.current, state.exit, EdgeKind::kNormal);
  out_->scopes_[index].is_generator = out_->scopes_[index].is_generator || state.is_generator;
  if (!Failed()) Materialize(state, &out_->scopes_[index]);
  scope_ = saved;
  nesting_ = saved_nesting;
}

void CfgBuilder::Materialize(ScopeState& st, FunctionCfg* cfg) {
  const int n = static_cast<int>(st.blocks.size());
  auto removable = [&](int b) {
    return st.blocks[b].kind == BlockKind::kBasic && st.blocks[b].statements.empty();
  };
  std::vector<std::vector<int>> out_edges(n);
  for (size_t i = 0; i < st.edges.size(); ++i) out_edges[st.edges[i].from].push_back(i);

  // Empty blocks (joins, "after" blocks) forward to their single successor. An edge into
  // one keeps its own kind unless it is plain kNormal, then it takes the forwarded kind
  // (an empty join at the end of a loop body forwards a kLoopBack).
  auto forward = [&](RawEdge e) {
    for (int hops = 0; hops < n && removable(e.to) && out_edges[e.to].size() == 1; ++hops) {
      const RawEdge& next = st.edges[out_edges[e.to][0]];
      if (next.to == e.to) break;
      if (e.kind == EdgeKind::kNormal) e.kind = next.kind;
      e.to = next.to;
    }
    return e;
  };
  std::vector<RawEdge> edges;
  std::vector<bool> has_pred(n, false);
  for (const RawEdge& raw : st.edges) {
    if (removable(raw.from)) continue;  // re-added below only if the block survives
    RawEdge e = forward(raw);
    edges.push_back(e);
  }
  for (const RawEdge& e : edges) has_pred[e.to] = true;
  // A surviving empty block (several successors, or none) keeps its edges.
  std::vector<bool> keep(n, false);
  for (int b = 0; b < n; ++b) {
    if (!removable(b)) {
      keep[b] = true;
    } else if (has_pred[b] && out_edges[b].size() != 1) {
      keep[b] = true;
      for (int ei : out_edges[b]) edges.push_back(forward(st.edges[ei]));
    }
  }
  // Drop edges whose source was dropped (cannot happen for kept sources) and duplicates;
  // order each block's out-edges: terminator edges as added, exception edges last.
  std::vector<std::vector<RawEdge>> per_block(n);
  for (const RawEdge& e : edges) {
    if (!keep[e.from] || !keep[e.to]) continue;
    auto& list = per_block[e.from];
    bool dup = false;
    for (const RawEdge& x : list) {
      if (x.to == e.to && x.kind == e.kind) dup = true;
    }
    if (!dup) list.push_back(e);
  }
  for (auto& list : per_block) {
    std::stable_partition(list.begin(), list.end(),
                          [](const RawEdge& e) { return e.kind != EdgeKind::kException; });
  }

  // Numbering: Entry 0, then basic blocks in source order of their first statement
  // (comprehensions: clause order, which is execution order), Exit last.
  std::vector<int> order;
  for (int b = 0; b < n; ++b) {
    if (keep[b] && st.blocks[b].kind == BlockKind::kBasic) order.push_back(b);
  }
  if (st.kind != ScopeKind::kComprehension) {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const auto& sa = st.blocks[a].statements;
      const auto& sb = st.blocks[b].statements;
      uint32_t ka = sa.empty() ? UINT32_MAX : sa.front().span.begin_byte;
      uint32_t kb = sb.empty() ? UINT32_MAX : sb.front().span.begin_byte;
      return ka < kb;
    });
  }
  order.insert(order.begin(), st.entry);
  order.push_back(st.exit);
  std::vector<int> new_id(n, -1);
  for (size_t i = 0; i < order.size(); ++i) new_id[order[i]] = static_cast<int>(i);

  Graph g(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    RawBlock& rb = st.blocks[order[i]];
    BasicBlock& bb = g[i];
    bb.id = static_cast<int32_t>(i);
    bb.kind = rb.kind;
    bb.terminator = rb.terminator;
    bb.statements = std::move(rb.statements);
    if (!bb.statements.empty()) {
      bb.span = Span(bb.statements.front().span.begin_byte, bb.statements.back().span.end_byte);
      bb.loop_depth = bb.statements.front().loop_depth;
    }
  }
  for (int old : order) {
    for (const RawEdge& e : per_block[old]) {
      boost::add_edge(new_id[e.from], new_id[e.to], Edge{e.kind}, g);
    }
  }
  cfg->graph = std::move(g);
  cfg->entry = 0;
  cfg->exit = order.size() - 1;
}

Status CfgBuilder::BuildProgram(TSNode root) {
  int32_t index = ReserveScope(ScopeKind::kModule, "<module>", root,
                               Span(ts_node_start_byte(root), ts_node_start_byte(root)), 1);
  out_->scopes_[index].span = Span(0, static_cast<uint32_t>(source_.size()));
  BuildScope(index, root);
  if (!status_.ok()) return status_;
  if (syntax_error_) {
    out_->syntax_error_ = syntax_error_;
    out_->scopes_.clear();
    out_->unsupported_.clear();
  }
  return Status::Ok();
}

}  // namespace egca::cfg
