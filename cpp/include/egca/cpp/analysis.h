// Static analysis of C++ programs from Clang: statement-level control-flow graphs (the
// comparability gate I_cmp and `egca-cfg --lang cpp`) and the structural facts the
// constraint checkers read (loops and their depth, recursion, containers, sorting,
// includes, calls, statements).
//
// egca-cpp-cfg (cpp/cfg_tool, the only code besides the instrumenter that links libclang)
// builds clang::CFG for every function the program defines and keeps its statements, as
// egca::cfg does for Python: one Statement per statement of a compound statement, the header
// of each if / loop / switch / case / catch in the block it terminates or labels, blocks
// without a statement contracted away. The result is a cfg::ProgramCfg (scope 0: the file,
// Entry -> Exit; then one kFunction scope per function, qualified names "S::m", "ns::f"), so
// cfg::CompareStructure, the WL fingerprint and the text dump apply unchanged.
//
// Statement kinds: a declaration or `=` is assign, `+=` / `++` augassign, a call or other
// expression expr, return / break / continue, throw raise, `;` pass, if / elif (an if that
// is another if's else), for (for and range-for), while (while and do-while), match
// (switch), case (case / default labels), try, except (catch). Loop depth as in Python:
// the loops of the function enclosing the statement.
//
// Facts (gates::ProgramFacts, the same vocabulary and checkers as Python's):
//   loops      for / range-for ("for"), while / do-while ("while"); depth 1 = outermost
//              of its function; lambdas belong to the function they are written in
//   recursion  calls on a cycle of the call graph among the program's own functions
//   structures declarations (variables, parameters, fields) whose type is std::vector /
//              std::list / std::array / std::stack (list), std::map / std::unordered_map /
//              multimaps (dict), std::set / std::unordered_set / multisets (set),
//              std::priority_queue or a std::make_heap / push_heap / pop_heap call (heap),
//              std::deque / std::queue (deque)
//   sorting    std::sort, std::stable_sort, std::partial_sort, std::partial_sort_copy, and
//              any `.sort()` method (std::list::sort)
//   imports    `#include <name>`: module "name" ("vector", "bits/stdc++.h")
//   calls      "std::sort", "fact" (qualified names); a method call ".name"
//   statements every statement of every function
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "egca/cfg/cfg.h"
#include "egca/core/status.h"
#include "egca/gates/constraints.h"

namespace egca::cpp {

struct CppAnalysis {
  cfg::ProgramCfg program;
  gates::ProgramFacts facts;
};

// Runs egca-cpp-cfg on `source` (a separate process, 30 s wall limit). Memoized per thread
// for the last source analysed (the router's gates and checkers share one run). Errors:
// kFailedPrecondition the tool is not built (egca configured without libclang-cpp 14);
// kInvalidArgument the program does not parse or the tool timed out (the message says).
StatusOr<std::shared_ptr<const CppAnalysis>> AnalyzeCpp(std::string_view source);

// Builds the analysis from egca-cpp-cfg's output for `source` (the record format is in
// cpp/cfg_tool/main.cpp). kInvalidArgument on a malformed record (names the line).
StatusOr<CppAnalysis> ParseAnalysis(std::string source, std::string_view output);

// A constraint checker for C++ candidates: the spec's check (gates::CheckFacts) on the
// candidate's Clang facts. Violation() ignores its ProgramCfg argument (Python's); a
// candidate the tool cannot analyse violates nothing (it is SYNTAX when it does not
// compile). Specs must be valid (gates::ValidateConstraintSpec).
StatusOr<std::shared_ptr<const gates::ConstraintChecker>> MakeCppConstraint(
    const gates::ConstraintSpec& spec);
StatusOr<gates::ConstraintSet> MakeCppConstraintSet(const std::vector<gates::ConstraintSpec>& specs);

}  // namespace egca::cpp
