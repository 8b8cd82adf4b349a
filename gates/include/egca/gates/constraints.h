// Algorithmic constraints I_C(y) (EGCA section 3.3, eq. 3-5): a per-problem set of
// required / forbidden structural properties, checked statically on a candidate's source
// and CFG. Three layers:
//
//   ProgramFacts     what a program structurally does (loops and their nesting, recursion,
//                    data structures, sorting, imports, calls, statements), each fact with
//                    the span(s) where it occurs. Computed in one pass over the CFG's
//                    scopes plus a token scan of each statement (see ComputeFacts).
//   ConstraintSpec   a named, parameterized constraint ("max_loop_depth" 2), as written in a
//                    constraints file or produced by ExtractConstraints.
//   checkers         MakeConstraint(spec) -> a gates::ConstraintChecker the router runs; a
//                    violation names the constraint, says why in one line and points at the
//                    offending code (absent span only when something required is missing).
//
// Vocabulary (kind, value):
//   requires_recursion / forbids_recursion          no value
//   max_loop_depth                                  integer >= 0
//   requires_loop / forbids_loop                    "for" | "while" | "comprehension" | "any"
//   requires_structure / forbids_structure          "list" | "dict" | "set" | "heap" | "deque"
//                                                   | "Counter" | "defaultdict" | "OrderedDict"
//   requires_sorting / forbids_sorting              no value
//   requires_import / forbids_import                module name ("numpy", "os.path")
//   requires_call / forbids_call                    call name: "eval" (a bare call, builtins
//                                                   included), "math.factorial" (resolved
//                                                   through imports), ".sort" (any method)
//   max_statements                                  integer >= 1
// Semantics of each fact (what counts as a loop, a dict, sorting, a call to "sort") are in
// the ProgramFacts comments below and in docs/constraints.md.
//
// Files (ReadConstraintsFile / WriteConstraintsFile), JSON object keyed by problem id:
//   {"HumanEval/0": [{"kind": "max_loop_depth", "value": 2},
//                    {"kind": "forbids_import", "value": "numpy", "note": "why (optional)"}]}
// or JSONL, one problem per line: {"problem_id": "HumanEval/0", "constraints": [...]}.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "egca/cfg/cfg.h"
#include "egca/core/span.h"
#include "egca/core/status.h"
#include "egca/gates/router.h"

namespace egca::gates {

// ---------------------------------------------------------------------------------------
// Facts

enum class LoopKind : uint8_t { kFor, kWhile, kComprehension };
const char* LoopKindName(LoopKind kind);  // "for", "while", "comprehension"

// Data structures. kDict is any dict: a literal/comprehension, dict(), or one of the dict
// subclasses (Counter, defaultdict, OrderedDict), which also count under their own name.
enum class DataStructure : uint8_t {
  kList,
  kDict,
  kSet,
  kHeap,  // heapq (any function) or queue.PriorityQueue
  kDeque,
  kCounter,
  kDefaultDict,
  kOrderedDict,
};
const char* DataStructureName(DataStructure s);  // "list", ..., "Counter", "defaultdict"
// Case-insensitive; "heapq" is accepted for kHeap. nullopt if unknown.
std::optional<DataStructure> ParseDataStructure(std::string_view name);

struct LoopFact {
  LoopKind kind = LoopKind::kFor;
  SourceSpan span;    // "for i in xs:" / "while c:" header; a comprehension's "for" clause
  int32_t depth = 1;  // 1 = outermost loop of its function (see ComputeFacts)
  int32_t scope = 0;  // ProgramCfg::scopes() index the loop belongs to
};

struct CallFact {
  // The callee as resolved through imports: "len", "math.sqrt" (for `m.sqrt` after
  // `import math as m`, or `sqrt` after `from math import sqrt`), "heapq.heappush".
  // A method call on anything that is not a module is ".name" (".sort", ".append").
  std::string name;
  SourceSpan span;  // the callee's first byte .. the closing parenthesis
  int32_t scope = 0;
};

struct ImportFact {
  std::string module;  // "numpy", "os.path", "collections"; relative imports keep their dots
  SourceSpan span;     // the import statement
};

struct StructureUse {
  DataStructure structure = DataStructure::kList;
  SourceSpan span;  // the literal / comprehension / constructor call / heapq call
};

struct SortUse {
  std::string how;  // "sorted", ".sort", "heapq.nsmallest", "heapq.nlargest", "bisect.insort"
  SourceSpan span;  // the call
};

struct RecursiveCall {
  std::string function;  // qualified name of the caller ("f", "C.m", "f.<locals>.g")
  std::string callee;    // qualified name of the called function
  bool direct = false;   // the function calls itself (else: a cycle through others)
  SourceSpan span;       // the call
};

struct ProgramFacts {
  std::vector<LoopFact> loops;  // source order
  int32_t max_loop_depth = 0;   // max over loops of depth; 0 without loops
  std::vector<CallFact> calls;  // source order
  std::vector<ImportFact> imports;
  std::vector<StructureUse> structures;
  std::vector<SortUse> sorts;
  std::vector<RecursiveCall> recursive_calls;  // calls on a cycle of the call graph
  std::vector<SourceSpan> statements;          // counted statements, source order

  // First loop with depth == max_loop_depth, or nullptr.
  const LoopFact* DeepestLoop() const;
  // Deterministic text dump, one fact per line (tests, --explain).
  std::string Dump() const;
};

// Facts of a parsed program (spans index program.source()). A program that did not parse
// has no facts. Deterministic; pure function of the program.
//
//   loops      every for / async for / while statement and every comprehension "for"
//              clause. depth counts the loops enclosing it, itself included, within its
//              function: a comprehension nested in a loop body (or in another
//              comprehension) is one level deeper; a def / lambda / class body starts again
//              at 0 (a helper called from a loop is not seen as nested).
//   recursion  call graph over the program's functions: a call `g(...)` resolves to the
//              innermost visible def g (enclosing scopes, then module); `self.m(...)` /
//              `cls.m(...)` / `C.m(...)` inside class C to its method m. Calls made inside
//              a lambda or comprehension count for the enclosing function. A call on a
//              cycle (a self-loop: direct) is a recursive call.
//   structures list: [...] display (not a subscript), list comprehension, list();
//              dict: {k: v} / {} / {**d}, dict comprehension, dict(), and the subclasses;
//              set: {a, b}, set comprehension, set(), frozenset(); the collections/heapq/
//              queue names resolved through imports (`import collections as c; c.deque()`).
//   sorting    sorted(), any `.sort(...)` method call, heapq.nsmallest / nlargest,
//              bisect.insort / insort_left / insort_right.
//   imports    `import a.b`, `from a.b import x` (module "a.b"), and __import__("a") with
//              a string literal.
//   statements every statement of every scope except docstrings, the statements of
//              lambdas and comprehension clauses (they are expressions in the source).
ProgramFacts ComputeFacts(const cfg::ProgramCfg& program);
// Parses `source` first. kInvalidArgument if it does not parse (naming the syntax error).
StatusOr<ProgramFacts> ComputeFacts(std::string_view source);

// ---------------------------------------------------------------------------------------
// Specs

// Flag constraints have no value; bounds are integers; the others strings.
using ConstraintValue = std::variant<std::monostate, int64_t, std::string>;

struct ConstraintSpec {
  std::string kind;       // one of the vocabulary above
  ConstraintValue value;  // see the vocabulary
  std::string note;       // free text carried through files (e.g. a teacher's reason)

  // Canonical text: "requires_recursion", "max_loop_depth(2)", "forbids_import(numpy)".
  // It is also the checker's name() and ConstraintViolation::constraint.
  std::string ToString() const;
  bool operator==(const ConstraintSpec& o) const {
    return kind == o.kind && value == o.value && note == o.note;
  }
};

// Every known kind, in the order above.
const std::vector<std::string>& ConstraintKinds();
// OK if `spec` names a known kind with a valid value; else kInvalidArgument saying what.
Status ValidateConstraintSpec(const ConstraintSpec& spec);

// One-sentence, model-facing instruction for the spec ("Do not import numpy."): eq. 4's
// soft guidance. PromptSuffix joins them into a block to append to a problem prompt
// ("" for no specs).
std::string DescribeConstraint(const ConstraintSpec& spec);
std::string PromptSuffix(const std::vector<ConstraintSpec>& specs);

// ---------------------------------------------------------------------------------------
// Checkers

using ConstraintSet =
    std::vector<std::shared_ptr<const ConstraintChecker>>;  // Problem::constraints

// The checker of a valid spec (kInvalidArgument otherwise). Checkers are immutable and
// thread-safe; Violation() computes the program's facts (memoized per thread for the last
// program seen, so a set of checkers on one candidate computes them once).
StatusOr<std::shared_ptr<const ConstraintChecker>> MakeConstraint(const ConstraintSpec& spec);
StatusOr<ConstraintSet> MakeConstraintSet(const std::vector<ConstraintSpec>& specs);

// Checks every spec against precomputed facts (what the checkers do, minus the parse):
// one violation per violated spec, in spec order. Specs must be valid.
std::vector<ConstraintViolation> CheckFacts(const ProgramFacts& facts,
                                            const std::vector<ConstraintSpec>& specs);

// ---------------------------------------------------------------------------------------
// Extraction from a reference solution

// Conservative by design: a constraint extracted from one reference must not reject the
// typical correct alternative. Defaults calibrated on HumanEval (bench/constraints,
// docs/constraints.md).
struct ExtractionPolicy {
  // max_loop_depth = max(reference depth + slack, floor) (slack < 0: not extracted).
  int32_t loop_depth_slack = 1;
  int32_t loop_depth_floor = 0;
  // max_statements = ceil(factor * reference statements) + slack (factor <= 0: off).
  double statement_factor = 3.0;
  int32_t statement_slack = 10;
  // forbids_import(m) for each of these the reference does not import (prefix match).
  std::vector<std::string> forbidden_imports = {
      "numpy",    "scipy",      "pandas",          "sympy",     "torch",  "tensorflow", "sklearn",
      "networkx", "subprocess", "multiprocessing", "threading", "socket", "ctypes"};
  // forbids_call(c) for each of these the reference does not call.
  std::vector<std::string> forbidden_calls = {"exec", "compile", "__import__"};
  // requires_recursion when the problem text asks for it ("recursion", "recursive",
  // "recursively" as words), forbids_recursion when it rules it out ("Do not use
  // recursion", "without recursion", "non-recursive"); the reference alone never makes
  // recursion required.
  bool follow_recursion_request = true;
  // Off by default (calibration: these reject many correct alternatives).
  bool forbid_recursion_if_absent = false;
  bool forbid_sorting_if_absent = false;
  bool forbid_while_if_absent = false;
  std::vector<DataStructure> forbid_structures_if_absent;  // e.g. {kHeap, kDeque}
};

// Specs for a problem from its reference solution (and, optionally, the problem text, which
// is searched only for an explicit request for, or ban of, recursion). kInvalidArgument if the
// reference does not parse. Deterministic; order: recursion, loop depth, statements,
// sorting, structures, loops, imports, calls.
StatusOr<std::vector<ConstraintSpec>> ExtractConstraints(std::string_view reference,
                                                         const ExtractionPolicy& policy = {},
                                                         std::string_view problem_text = {});

// ---------------------------------------------------------------------------------------
// Files

// problem id -> its specs (ordered by id, so a written file is deterministic).
using ConstraintsByProblem = std::map<std::string, std::vector<ConstraintSpec>>;

// Reads a .json object (keyed by problem id) or .jsonl file (one {"problem_id",
// "constraints"} per line; chosen by content, not name; .gz read transparently). Errors
// (kInvalidArgument / kNotFound) name the file, the problem (and line for JSONL) and the
// entry index: "c.json: problem HumanEval/3, entry 1: unknown kind 'max_depth'". A
// problem id given twice is an error.
StatusOr<ConstraintsByProblem> ReadConstraintsFile(const std::string& path);
// The same, from text; `origin` names it in errors.
StatusOr<ConstraintsByProblem> ParseConstraints(std::string_view text, std::string_view origin);

// Writes the JSON-object form (pretty, keys sorted, atomically); readable back into an
// equal map. Invalid specs are an error (nothing written).
Status WriteConstraintsFile(const std::string& path, const ConstraintsByProblem& constraints);
std::string FormatConstraints(const ConstraintsByProblem& constraints);

}  // namespace egca::gates
