// The failure-mode router for C++ candidates: the same routes and RouteResult as
// gates::Router (EGCA eq. 5), with egca::cpp grading.
//   SYNTAX      clang rejects the program (span: clang's first error, widened to its line),
//               or the candidate fails at run time (a crash, an uncaught exception of the
//               candidate, abort, a failing assert in candidate code; span: the faulting or
//               throwing statement's line when debug info maps it to the candidate)
//   CONSTRAINT  a constraint checker rejects it (checkers that read C++ source)
//   CORRECT     every test passes
//   LOGIC       otherwise (a failing test assert, a test-side throw, wrong output, timeout)
// LOGIC with a reference: the candidate and the reference are traced on the first failing
// test (per-statement snapshots, trace.h) and aligned; earliest_divergence /
// last_divergence / random_boundary are candidate line spans, `localization` the details.
// Not yet for C++: I_cmp (Clang CFG comparability): RouteResult::comparability stays
// absent. See docs/cpp.md.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include "egca/core/status.h"
#include "egca/cpp/executor.h"
#include "egca/gates/router.h"

namespace egca::cpp {

struct CppRouterOptions {
  tracer::RunOptions run;               // limits of every test
  bool runtime_error_is_logic = false;  // as gates::RouterOptions
  bool localize = true;                 // trace + align LOGIC candidates (needs a reference)
  int64_t max_events = 20000;           // snapshot events per traced run
  uint64_t seed = 0;                    // random-boundary choice
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

 private:
  CppExecutor* executor_;
  CppRouterOptions options_;
  // The reference's traces, by reference + test code.
  std::map<std::string, CppTrace> reference_traces_;
};

}  // namespace egca::cpp
