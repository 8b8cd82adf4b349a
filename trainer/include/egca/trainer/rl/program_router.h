// The trainer's routing seam: one ProgramRouter per routing worker routes a program by its
// problem's language, Python through gates::Router + tracer::Executor, C++ through
// cpp::CppRouter + cpp::CppExecutor. Both give the common gates::RouteResult (mode, R_hat,
// I_C, error span, earliest / last / random divergence as spans of the program's bytes), so
// everything after routing (rewards, group advantages, token credit, metrics, the rollout
// dump, multi-turn feedback) is the same code for both languages.
//
// Cost: a worker starts only the executors of the languages it is given; a C++ executor
// compiles each distinct program once (the <bits/stdc++.h> PCH and the compiled programs
// are cached on disk, shared by every worker), and its router keeps, per worker and for
// the whole run, each reference's Clang CFG and traces.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "egca/core/language.h"
#include "egca/core/status.h"
#include "egca/gates/router.h"

namespace egca::cpp {
class CppExecutor;
class CppRouter;
}  // namespace egca::cpp

namespace egca::tracer {
class Executor;
}  // namespace egca::tracer

namespace egca::trainer {

// What routing needs besides the program and the problem; the same fields for both
// languages (apps_conventions is Python's only).
struct RouteSettings {
  double timeout_seconds = 4;       // wall and CPU seconds per test
  int64_t memory_mb = 2048;         // address space per run
  bool localize = true;             // trace + align LOGIC samples against the reference
  bool check_comparability = true;  // the I_cmp gate
  bool runtime_error_is_logic = false;
  bool apps_conventions = false;  // Python: APPS's import header
};

// "auto" (each problem's own language: record.language), "python" or "cpp". Returns false
// for anything else.
bool ParseLanguageChoice(std::string_view name, std::optional<Language>* out);
// The language a problem of `record_language` ("python", "cpp") is routed as under
// `forced` (nullopt: its own).
Language RoutedLanguage(std::string_view record_language, std::optional<Language> forced);

class ProgramRouter {
 public:
  // Starts a tracer::Executor when `python`, a cpp::CppExecutor when `cpp` (both servers
  // are programs of their own, exec mode: no candidate sees this process's memory).
  static StatusOr<std::unique_ptr<ProgramRouter>> Create(bool python, bool cpp);
  ~ProgramRouter();
  ProgramRouter(const ProgramRouter&) = delete;
  ProgramRouter& operator=(const ProgramRouter&) = delete;

  // Routes `program` (the complete program, spans index it) against `problem`. `cache` is
  // the problem's Python reference cache (shared across workers; unused for C++, whose
  // router keeps its own per worker). One call at a time per router. Errors: egca's own
  // (no executor for `language`, the executor failed).
  StatusOr<gates::RouteResult> Route(Language language, std::string_view program,
                                     const gates::Problem& problem, const RouteSettings& settings,
                                     const std::shared_ptr<gates::ReferenceCache>& cache);

  // Python: traces the reference ahead of routing (gates::Router::PrepareReference). C++:
  // nothing (the C++ router compiles, analyses and traces a reference on first use).
  Status PrepareReference(Language language, const gates::Problem& problem,
                          const RouteSettings& settings,
                          const std::shared_ptr<gates::ReferenceCache>& cache);

 private:
  ProgramRouter();
  std::unique_ptr<tracer::Executor> python_;
  std::unique_ptr<cpp::CppExecutor> cpp_executor_;
  std::unique_ptr<cpp::CppRouter> cpp_router_;  // over cpp_executor_
};

}  // namespace egca::trainer
