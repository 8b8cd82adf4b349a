#include "egca/trainer/rl/program_router.h"

#include <fmt/format.h>

#include "egca/cpp/executor.h"
#include "egca/cpp/router.h"
#include "egca/tracer/executor.h"

namespace egca::trainer {

bool ParseLanguageChoice(std::string_view name, std::optional<Language>* out) {
  if (name == "auto") {
    *out = std::nullopt;
    return true;
  }
  if (name == "python" || name == "cpp") {
    *out = ParseLanguage(name);
    return true;
  }
  return false;
}

Language RoutedLanguage(std::string_view record_language, std::optional<Language> forced) {
  if (forced) return *forced;
  return record_language == "cpp" ? Language::kCpp : Language::kPython;
}

ProgramRouter::ProgramRouter() = default;
ProgramRouter::~ProgramRouter() = default;

StatusOr<std::unique_ptr<ProgramRouter>> ProgramRouter::Create(bool python, bool cpp) {
  std::unique_ptr<ProgramRouter> r(new ProgramRouter());
  if (python) {
    EGCA_ASSIGN_OR_RETURN(r->python_, tracer::Executor::Create({}));
  }
  if (cpp) {
    EGCA_ASSIGN_OR_RETURN(r->cpp_executor_, cpp::CppExecutor::Create({}));
    r->cpp_router_ =
        std::make_unique<cpp::CppRouter>(r->cpp_executor_.get(), cpp::CppRouterOptions{});
  }
  return r;
}

namespace {

tracer::RunOptions RunOptionsOf(const RouteSettings& s) {
  tracer::RunOptions o;
  o.limits.wall_seconds = s.timeout_seconds;
  o.limits.cpu_seconds = s.timeout_seconds;
  o.limits.memory_bytes = static_cast<uint64_t>(s.memory_mb) << 20;
  return o;
}

gates::RouterOptions PythonOptions(const RouteSettings& s) {
  gates::RouterOptions o;
  o.run = RunOptionsOf(s);
  o.run.apps_import_header = s.apps_conventions;
  o.localize = s.localize;
  o.check_comparability = s.check_comparability;
  o.runtime_error_is_logic = s.runtime_error_is_logic;
  return o;
}

// The C++ router's defaults (its I_cmp threshold included) with the run's settings.
cpp::CppRouterOptions CppOptions(const RouteSettings& s) {
  cpp::CppRouterOptions o;
  o.run = RunOptionsOf(s);
  o.localize = s.localize;
  o.check_comparability = s.check_comparability;
  o.runtime_error_is_logic = s.runtime_error_is_logic;
  return o;
}

}  // namespace

StatusOr<gates::RouteResult> ProgramRouter::Route(
    Language language, std::string_view program, const gates::Problem& problem,
    const RouteSettings& settings, const std::shared_ptr<gates::ReferenceCache>& cache) {
  if (language == Language::kCpp) {
    if (!cpp_router_)
      return FailedPrecondition("a C++ problem, but this worker has no C++ executor");
    EGCA_ASSIGN_OR_RETURN(cpp::CppRouteResult routed,
                          cpp_router_->Route(program, problem, CppOptions(settings)));
    return std::move(routed.route);
  }
  if (!python_)
    return FailedPrecondition("a Python problem, but this worker has no Python executor");
  gates::Router router(python_.get(), PythonOptions(settings), cache);
  return router.Route(program, problem);
}

Status ProgramRouter::PrepareReference(Language language, const gates::Problem& problem,
                                       const RouteSettings& settings,
                                       const std::shared_ptr<gates::ReferenceCache>& cache) {
  if (language == Language::kCpp || !python_) return Status::Ok();
  gates::Router router(python_.get(), PythonOptions(settings), cache);
  return router.PrepareReference(problem);
}

}  // namespace egca::trainer
