// Control-flow graphs of Python programs: the model.
//
// A ProgramCfg holds one control-flow graph per code object CPython 3.11 would create for
// the program: the module, every function (def / async def), every lambda, every class
// body and every comprehension or generator expression (3.11 compiles these into their
// own code objects, so tracer events arrive under their names: "<listcomp>",
// "<genexpr>", ...). Each graph is a Boost.Graph adjacency_list of basic blocks with
// exactly one Entry (id 0, no statements) and one Exit (the last id, no statements).
//
// Statements carry the source span of what executes: for a compound statement that is its
// header only ("if x > 0:", "for i in range(n):", "def f(a, b):"); the body's statements are
// separate. Spans follow egca's convention (bytes [begin, end), lines 1-based, columns
// 0-based UTF-8 bytes) and index the source passed to Build().
//
// Successor order per terminator (out-edges of a block come in exactly this order; an
// exception edge, if any, always comes last):
//   kNone            [normal]                       fall through (or kLoopBack / jump)
//   kIf              [true, false]                  "if c:" / "elif c:"
//   kWhile           [true (body), false (else/after)]
//   kFor, kAsyncFor  [true (next item: body), false (exhausted: else/after)]
//   kComprehensionFor[true (next clause / element), false (exhausted: outer loop or exit)]
//   kComprehensionIf [true (next clause / element), false (loop-back to innermost for)]
//   kCaseTest        [true (case body), false (next case / after match)]
//   kExceptTest      [true (handler body), false (next clause, or re-raise)]
//                    a bare "except:" has only [true]
//   kAssert          [true (assertion holds), exception (AssertionError)]
//   kYield           [normal (resumed), exception (thrown into the generator)]
//   kReturn          [return]      to Exit, or into the enclosing finally
//   kRaise           [exception]   to the handler test, an enclosing finally, or Exit
//   kBreak           [break]       to the loop's after block (or an enclosing finally)
//   kContinue        [continue]    to the loop header (or an enclosing finally)
//   kFinallyExit     [normal (after the try, if reached normally), then one edge per
//                     abrupt exit that entered the finally, in first-seen order:
//                     return / break / continue / exception, each routed onward]
// Blocks inside a try body (or an except/else clause protected by a finally) that hold a
// statement get one exception edge to where an exception raised there goes. Outside any
// try, only raise/assert/yield have exception edges (to Exit): every call may raise, and
// drawing that edge from every block would say nothing.
//
// A single copy of each finally body is kept (CPython duplicates it); its exit block
// fans out to every continuation, so the graph over-approximates paths through finally.
// "with" is sequential: __exit__ has no source of its own and exception suppression by a
// context manager is not modelled.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/span.h"
#include "egca/core/status.h"

namespace egca::cfg {

enum class EdgeKind : uint8_t {
  kNormal,
  kTrue,
  kFalse,
  kLoopBack,  // end of a loop body (or a failed comprehension filter) back to the header
  kException,
  kBreak,
  kContinue,
  kReturn,
};

enum class BlockKind : uint8_t { kEntry, kExit, kBasic };

enum class Terminator : uint8_t {
  kNone,
  kIf,
  kWhile,
  kFor,
  kAsyncFor,
  kComprehensionFor,
  kComprehensionIf,
  kCaseTest,
  kExceptTest,
  kAssert,
  kYield,
  kReturn,
  kRaise,
  kBreak,
  kContinue,
  kFinallyExit,
};

// What a statement is, ignoring identifiers and literals (the normalized label's base).
enum class StmtKind : uint8_t {
  kExpression,
  kDocstring,  // first string-literal statement of a module/function/class body
  kAssign,
  kAugAssign,
  kAnnAssign,
  kDelete,
  kPass,
  kImport,
  kGlobal,
  kNonlocal,
  kAssert,
  kReturn,
  kRaise,
  kBreak,
  kContinue,
  kIf,
  kElif,
  kWhile,
  kFor,
  kAsyncFor,
  kWith,
  kAsyncWith,
  kTry,
  kExcept,
  kFinally,
  kMatch,
  kCase,
  kDecorator,
  kFunctionDef,
  kAsyncFunctionDef,
  kClassDef,
  kLambdaBody,            // the body expression of a lambda (its only statement)
  kComprehensionFor,      // "for x in xs" clause of a comprehension
  kComprehensionIf,       // "if c" clause of a comprehension
  kComprehensionElement,  // the element (or key: value) a comprehension produces
  kOther,                 // a statement kind this version does not know (see unsupported)
};

enum class ScopeKind : uint8_t { kModule, kFunction, kLambda, kClass, kComprehension };

const char* EdgeKindName(EdgeKind kind);
const char* BlockKindName(BlockKind kind);
const char* TerminatorName(Terminator t);
const char* StmtKindName(StmtKind kind);
const char* ScopeKindName(ScopeKind kind);

struct Statement {
  StmtKind kind = StmtKind::kOther;
  SourceSpan span;              // what executes (compound statements: header only)
  int32_t loop_depth = 0;       // loops of this scope enclosing the statement
  bool contains_yield = false;  // a yield / yield from directly in this statement
  bool contains_await = false;
  std::vector<int32_t> child_scopes;  // ProgramCfg::scopes indices created here, in order
};

struct BasicBlock {
  int32_t id = 0;  // == vertex index
  BlockKind kind = BlockKind::kBasic;
  Terminator terminator = Terminator::kNone;
  std::vector<Statement> statements;  // in execution order
  SourceSpan span;                    // first statement's begin .. last statement's end
  int32_t loop_depth = 0;             // of its first statement
};

struct Edge {
  EdgeKind kind = EdgeKind::kNormal;
};

// Out-edges are stored in a vector, so they iterate in insertion order: the documented
// successor order.
using Graph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, BasicBlock, Edge>;
using BlockId = Graph::vertex_descriptor;

struct Successor {
  BlockId block;
  EdgeKind kind;
};

// One code object's control-flow graph.
struct FunctionCfg {
  ScopeKind kind = ScopeKind::kModule;
  // The code object's co_name: "<module>", "f", "<lambda>", "<listcomp>", "<setcomp>",
  // "<dictcomp>", "<genexpr>", or the class name.
  std::string name;
  // CPython-style __qualname__ ("C.m", "f.<locals>.g", "f.<locals>.<listcomp>").
  std::string qualified_name;
  // co_firstlineno: the first decorator's line for a decorated def/class, the def/class
  // line otherwise, the line where a lambda/comprehension starts, 1 for the module.
  int32_t first_line = 1;
  SourceSpan span;         // the whole definition (module: the whole source)
  SourceSpan header_span;  // "def f(a, b):" / "class C(B):" / the lambda or comprehension
  int32_t parent = -1;     // enclosing scope index in ProgramCfg::scopes; -1 for the module
  bool is_generator = false;
  bool is_async = false;
  Graph graph;
  BlockId entry = 0;
  BlockId exit = 0;

  size_t block_count() const { return boost::num_vertices(graph); }
  const BasicBlock& block(BlockId id) const { return graph[id]; }
  // Successors in the documented order; predecessors in a stable (edge-creation) order.
  std::vector<Successor> Successors(BlockId id) const;
  std::vector<Successor> Predecessors(BlockId id) const;
};

// A construct the builder does not model faithfully (reported, never a crash).
struct Unsupported {
  SourceSpan span;
  std::string what;
};

// Why a program does not parse: the first tree-sitter ERROR/MISSING node, or a construct
// that CPython 3.11 rejects at compile time ("'break' outside loop").
struct SyntaxError {
  SourceSpan span;
  std::string message;
};

struct BuildOptions {
  // Deeper nesting of blocks/expressions than this yields kUnimplemented (CPython itself
  // refuses more than 100 indentation levels); bounds the builder's recursion.
  int32_t max_nesting_depth = 200;
  // Give up parsing after this long (0 = no limit); a timeout yields kResourceExhausted.
  uint64_t parse_timeout_micros = 0;

  BuildOptions& set_max_nesting_depth(int32_t v) {
    max_nesting_depth = v;
    return *this;
  }
  BuildOptions& set_parse_timeout_micros(uint64_t v) {
    parse_timeout_micros = v;
    return *this;
  }
};

class ProgramCfg {
 public:
  // Parses `source` (UTF-8 Python) and builds every scope's CFG. A program that does not
  // parse is not an error: the result has syntax_error() set and no scopes. Errors are
  // egca's own: source larger than 4 GiB, nesting beyond options.max_nesting_depth
  // (kUnimplemented), parser timeout.
  static StatusOr<ProgramCfg> Build(std::string_view source, const BuildOptions& options = {});

  // A program another language's frontend built (egca::cpp: C++ CFGs from Clang), so the
  // comparability gate, the dumps and the lookups work on it unchanged. `scopes` must start
  // with the module (or file) scope; every scope has Entry = block 0 and Exit = its last
  // block; spans index `source`. The result is parsed, with no unsupported constructs.
  static ProgramCfg FromScopes(std::string source, std::vector<FunctionCfg> scopes);

  // Parse only, no CFG: the first tree-sitter ERROR/MISSING node, or nullopt if the tree
  // is clean. Cheaper than Build(); misses the compile-time checks Build() adds ('return'
  // outside function, 'break' outside loop, Python 2 print, ...).
  static StatusOr<std::optional<SyntaxError>> CheckSyntax(std::string_view source,
                                                          const BuildOptions& options = {});

  bool parsed() const { return !syntax_error_.has_value(); }
  const std::optional<SyntaxError>& syntax_error() const { return syntax_error_; }
  const std::vector<Unsupported>& unsupported() const { return unsupported_; }
  // scopes()[0] is the module; the others in source order of their definitions, except
  // that scopes inside a comprehension's first iterable follow the comprehension's own.
  const std::vector<FunctionCfg>& scopes() const { return scopes_; }
  const FunctionCfg& module() const { return scopes_.front(); }

  // Index of the scope of a code object (co_name, co_firstlineno), as the tracer reports it;
  // -1 if none. Several lambdas/comprehensions on one line: the first in source order.
  int32_t FindScope(std::string_view code_name, int32_t first_line) const;
  // Index of the first scope named `name` (co_name or qualified name); -1 if none.
  int32_t FindScopeByName(std::string_view name) const;
  // Innermost scope whose span contains byte `byte` (0, the module, if no other does).
  int32_t ScopeAt(uint32_t byte) const;

  // Deterministic text dump of every scope (or of one scope).
  std::string Dump() const;
  std::string DumpScope(int32_t index) const;
  std::string_view source() const { return source_; }

 private:
  friend class CfgBuilder;
  std::string source_;  // Owned copy: statement text in dumps and spans refer to it.
  std::optional<SyntaxError> syntax_error_;
  std::vector<Unsupported> unsupported_;
  std::vector<FunctionCfg> scopes_;
};

}  // namespace egca::cfg
