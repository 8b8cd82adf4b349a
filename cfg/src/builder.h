// CfgBuilder: turns a tree-sitter Python tree into ProgramCfg scopes. Private to cfg/;
// the entry point is ProgramCfg::Build().
#pragma once

#include <tree_sitter/api.h>

#include <optional>
#include <string_view>
#include <vector>

#include "egca/cfg/cfg.h"
#include "egca/core/span.h"
#include "egca/core/status.h"

namespace egca::cfg {

class CfgBuilder {
 public:
  CfgBuilder(std::string_view source, const BuildOptions& options, ProgramCfg* out);
  // Builds every scope below the module node `root` into `out`. A compile-time error
  // CPython would report ("'break' outside loop") sets out->syntax_error_ and leaves no
  // scopes; the returned Status is for egca's own limits (nesting depth).
  Status BuildProgram(TSNode root);

 private:
  // Construction-time graph of one scope; materialized into a FunctionCfg at the end.
  struct RawBlock {
    BlockKind kind = BlockKind::kBasic;
    Terminator terminator = Terminator::kNone;
    std::vector<Statement> statements;
    bool exception_routed = false;
  };
  struct RawEdge {
    int from;
    int to;
    EdgeKind kind;
  };
  // What an abrupt jump (break/continue/return/exception) meets on its way out.
  struct Frame {
    enum class Type { kLoop, kHandler, kFinally } type;
    int target = -1;  // loop: header; handler: first except test; finally: its entry block
    int after = -1;   // loop: the block after the loop (break target)
    std::vector<EdgeKind> pending;  // finally: abrupt exits that entered it, first-seen order
  };
  struct ScopeState {
    int32_t index = 0;
    ScopeKind kind = ScopeKind::kModule;
    std::vector<RawBlock> blocks;
    std::vector<RawEdge> edges;
    std::vector<Frame> frames;
    int entry = 0;
    int exit = 0;
    int current = -1;  // -1: unreachable point (after return/raise/...); a block is made lazily
    int32_t loop_depth = 0;
    bool is_generator = false;
    bool is_async = false;
  };

  // Scopes.
  int32_t ReserveScope(ScopeKind kind, std::string name, TSNode node, SourceSpan header,
                       int32_t first_line);
  void BuildScope(int32_t index, TSNode node);
  void Materialize(ScopeState& state, FunctionCfg* cfg);

  // One Visit per syntax kind.
  void VisitBody(TSNode block, bool allow_docstring);
  void VisitStatement(TSNode node, bool first_in_body, bool allow_docstring);
  void VisitExpressionStatement(TSNode node, bool docstring);
  void VisitSimple(TSNode node, StmtKind kind);
  void VisitReturn(TSNode node);
  void VisitRaise(TSNode node);
  void VisitAssert(TSNode node);
  void VisitBreak(TSNode node);
  void VisitContinue(TSNode node);
  void VisitGlobal(TSNode node, StmtKind kind);
  void VisitIf(TSNode node);
  void VisitWhile(TSNode node);
  void VisitFor(TSNode node);
  void FinishLoop(TSNode node, TSNode body, int header);
  void VisitTry(TSNode node);
  void VisitWith(TSNode node);
  void VisitMatch(TSNode node);
  void VisitDecorated(TSNode node);
  void VisitFunctionDef(TSNode node, int32_t first_line);
  void VisitClassDef(TSNode node, int32_t first_line);
  void VisitLambda(TSNode node);
  void VisitComprehension(TSNode node);

  // Blocks and edges of the current scope.
  int NewBlock(BlockKind kind = BlockKind::kBasic);
  int Current();
  void AddEdge(int from, int to, EdgeKind kind);
  // Starts a fresh block reached from the current one by a normal edge.
  int StartBlock();
  void Terminate(int block, Terminator t);
  // Appends to the current block; inside a try, routes the block's exception edge once.
  void Append(Statement stmt, bool may_raise = true);
  // Routes an abrupt exit of kind `route` from `from` outwards through the frames: to a
  // loop, handler, finally or Exit. The edge drawn carries `edge_kind`.
  void Jump(int from, EdgeKind route, EdgeKind edge_kind);
  void Jump(int from, EdgeKind route) { Jump(from, route, route); }
  bool InLoop() const;

  // Statements.
  Statement MakeStatement(StmtKind kind, uint32_t begin, uint32_t end) const;
  Statement MakeStatement(StmtKind kind, TSNode node) const;
  // Finds lambdas/comprehensions (building their scopes) and yield/await below `node`,
  // without entering nested scopes.
  void Scan(TSNode node, Statement* stmt);
  // Leading whitespace of the line holding `byte` if only whitespace precedes it there.
  std::optional<std::string_view> LineIndent(uint32_t byte) const;
  // End of the header of a compound statement: the last non-comment child before `body`.
  uint32_t HeaderEnd(TSNode node, TSNode body) const;
  SourceSpan Span(uint32_t begin, uint32_t end) const { return lines_.SpanFromBytes(begin, end); }

  // Errors.
  bool Failed() const { return !status_.ok() || syntax_error_.has_value(); }
  void SetSyntaxError(TSNode node, std::string message);
  void AddUnsupported(TSNode node, std::string what);
  bool EnterNesting(TSNode node);
  void LeaveNesting() { --nesting_; }

  std::string_view source_;  // Borrowed: out->source_.
  LineIndex lines_;
  BuildOptions options_;
  ProgramCfg* out_;              // Borrowed.
  ScopeState* scope_ = nullptr;  // Borrowed: the scope being built.
  int32_t nesting_ = 0;
  Status status_;
  std::optional<SyntaxError> syntax_error_;
};

}  // namespace egca::cfg
