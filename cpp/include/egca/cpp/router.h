// The failure-mode router for C++ candidates: the same routes and RouteResult as
// gates::Router (EGCA eq. 5), with egca::cpp grading.
//   SYNTAX      clang rejects the program (span: clang's first error, widened to its line),
//               or the candidate fails at run time (a crash, an uncaught exception of the
//               candidate, abort, a failing assert in candidate code; span: the faulting or
//               throwing statement's line when debug info maps it to the candidate)
//   CONSTRAINT  a constraint checker rejects it (MakeCppConstraintSet: the vocabulary of
//               gates/constraints.h on Clang facts, analysis.h), or I_cmp = 0: the Clang
//               CFG's structure is not comparable to the reference's
//               (cfg::CompareStructure on both analyses, the same WL similarity as
//               Python with C++'s own threshold, kCppComparabilityThreshold; skipped
//               without a reference or when either program cannot be analysed)
//   CORRECT     every test passes
//   LOGIC       otherwise (a failing test assert, a test-side throw, wrong output, timeout)
// LOGIC with a reference: the candidate and the reference are traced on the first failing
// test (per-statement snapshots, trace.h) and aligned; earliest_divergence /
// last_divergence / random_boundary are candidate line spans, `localization` the details.
// passing_bypasses_gates: EGCA section 5's bypass, as gates::RouterOptions.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include "egca/core/status.h"
#include "egca/cpp/analysis.h"
#include "egca/cpp/executor.h"
#include "egca/gates/router.h"

namespace egca::cpp {

// The I_cmp threshold of C++ programs, chosen as Python's 0.40 was (the operating point
// where ~89% of passing programs are comparable to their own reference; a cross-task
// control alongside) on the odd-numbered MBXP tasks' passing completions, and checked on
// the even-numbered ones: 93.2% of those comparable, 83.2% of the control
// (bench/cpp_comparability, docs/cpp.md). C++ similarities run lower than Python's, so the
// gate separates tasks less well at this operating point than Python's does.
inline constexpr double kCppComparabilityThreshold = 0.25;

// Python's WL settings (cfg::StructureOptions) with C++'s threshold.
inline cfg::StructureOptions CppStructureOptions() {
  return cfg::StructureOptions().set_threshold(kCppComparabilityThreshold);
}

struct CppRouterOptions {
  tracer::RunOptions run;               // limits of every test
  bool runtime_error_is_logic = false;  // as gates::RouterOptions
  bool localize = true;                 // trace + align LOGIC candidates (needs a reference)
  int64_t max_events = 20000;           // snapshot events per traced run
  uint64_t seed = 0;                    // random-boundary choice
  bool check_comparability = true;      // the I_cmp gate
  cfg::StructureOptions structure = CppStructureOptions();  // its similarity and threshold
  bool passing_bypasses_gates = false;
};

// A C++ route: the common RouteResult plus the C++ localization details.
struct CppRouteResult {
  gates::RouteResult route;
  std::optional<CppLocalization> localization;
  double trace_seconds = 0;  // instrument + compile + run, candidate and reference
};

class CppRouter {
 public:
  // `executor` is borrowed and must outlive the router; one router per thread.
  CppRouter(CppExecutor* executor, CppRouterOptions options)
      : executor_(executor), options_(std::move(options)) {}

  // Routes one candidate (a complete C++ program without the tests' main) against
  // `problem` (its tests' test_code is the main). problem.reference is not run.
  StatusOr<CppRouteResult> Route(std::string_view candidate, const gates::Problem& problem);
  // The same with other options for this call (the trainer routes training samples with
  // localization and evaluation samples without, through one router and its caches).
  StatusOr<CppRouteResult> Route(std::string_view candidate, const gates::Problem& problem,
                                 const CppRouterOptions& options);

 private:
  CppExecutor* executor_;
  CppRouterOptions options_;
  // The reference's traces, by reference + test code.
  std::map<std::string, CppTrace> reference_traces_;
  // The reference's Clang CFG, by reference (null: it could not be analysed).
  std::map<std::string, std::shared_ptr<const CppAnalysis>> reference_cfgs_;
};

}  // namespace egca::cpp
