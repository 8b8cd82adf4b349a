// One sample through the executors: the program cut from the completion, its route
// (mode, reward, divergence spans) and, for ReflexiCoder, every answer graded.
#include "grpo_trainer_impl.h"

#include <algorithm>
#include <optional>

#include "egca/credit/grpo.h"
#include "egca/credit/reflexicoder.h"
#include "egca/datasets/samples.h"

namespace egca::trainer {

namespace {

// A span of the program moved into completion bytes (nullopt when it lies in text no token
// produced, e.g. a prompt prefix).
std::optional<SourceSpan> ToCompletionSpan(const std::optional<SourceSpan>& span,
                                           const datasets::SampleProgram& program) {
  if (!span) return std::nullopt;
  const int64_t b = program.ToCompletionByte(span->begin_byte);
  const int64_t e = program.ToCompletionByte(span->end_byte);
  if (b < 0 || e < 0) return std::nullopt;
  SourceSpan out = *span;
  out.begin_byte = static_cast<uint32_t>(b);
  out.end_byte = static_cast<uint32_t>(std::max(b, e));
  return out;
}

}  // namespace

RouteSettings GrpoTrainer::Impl::SettingsFor(const TrainProblem& p, bool localize) const {
  RouteSettings o;
  o.timeout_seconds = config.timeout_seconds;
  o.memory_mb = config.memory_mb;
  o.apps_conventions = p.record.apps_conventions;
  o.localize = localize;
  o.check_comparability = config.check_comparability;
  o.runtime_error_is_logic = config.runtime_error_is_logic;
  return o;
}

// Fills a record from a completion and routes it (in a pool worker).
void GrpoTrainer::Impl::RouteRecord(int worker, TrainProblem& problem, RolloutRecord* r,
                                    bool localize) {
  if (config.reward == "reflexicoder") return RouteReflection(worker, problem, r, localize);
  RouteText(worker, problem, r->completion, 0, r, localize);
  if (!r->route_error.empty()) return;
  r->reward = config.reward == "binary"
                  ? credit::BinaryReward(r->route.grading.passed, r->route.grading.total,
                                         r->route.constraints_satisfied)
                  : r->route.reward;
}

// Routes the program of `text`, which starts at completion byte `offset`, into r->route
// with its spans in completion bytes.
void GrpoTrainer::Impl::RouteText(int worker, TrainProblem& problem, const std::string& text,
                                  int64_t offset, RolloutRecord* r, bool localize) {
  datasets::Sample sample;
  sample.problem_id = problem.record.id;
  sample.completion = text;
  const datasets::SampleProgram program = datasets::ProgramOf(sample, problem.record);
  r->program = program.code;
  r->code_offset = program.offset + offset;
  auto route = routers[worker]->Route(problem.language, program.code, problem.routing,
                                      SettingsFor(problem, localize), problem.cache);
  if (!route.ok()) {
    r->route_error = route.status().ToString();
    return;
  }
  r->route = std::move(*route);
  // Spans into completion bytes, where the credit operator needs them.
  auto move = [&](std::optional<SourceSpan>& span) {
    span = ToCompletionSpan(span, program);
    if (span) {
      span->begin_byte += static_cast<uint32_t>(offset);
      span->end_byte += static_cast<uint32_t>(offset);
    }
  };
  move(r->route.error_span);
  if (r->route.cause_span) {
    // A cause span may start in the prompt's context (gates/cause.h): keep the part the
    // completion holds.
    SourceSpan& c = *r->route.cause_span;
    uint32_t b = c.begin_byte;
    while (b < c.end_byte && program.ToCompletionByte(b) < 0) ++b;
    if (b < c.end_byte) c.begin_byte = b;
  }
  move(r->route.cause_span);
  move(r->route.earliest_divergence);
  move(r->route.last_divergence);
  move(r->route.random_boundary);
}

// ReflexiCoder (reward.kind = reflexicoder): the completion is <think>, <answer>, then
// (<reflection>, <answer>)*; every answer is graded (r_t = fraction of tests passed), the
// reward is R_overall of credit::ComputeReflectionReward (0 when the format is wrong), and
// the route (mode, spans for token credit) is the final answer's.
void GrpoTrainer::Impl::RouteReflection(int worker, TrainProblem& problem, RolloutRecord* r,
                                        bool localize) {
  const credit::ReflectionTrajectory t = credit::ParseReflectionTrajectory(r->completion);
  if (!t.well_formed) {
    RouteText(worker, problem, r->completion, 0, r, localize);  // spans for credit; reward 0
    r->reward = 0;
    r->reflection_note = "format: " + t.format_error;
    return;
  }
  std::vector<double> scores;
  size_t cursor = 0;
  for (size_t k = 0; k < t.answers.size(); ++k) {
    const size_t tag = r->completion.find("<answer>", cursor);
    const size_t at =
        tag == std::string::npos ? std::string::npos : r->completion.find(t.answers[k], tag);
    const int64_t offset = at == std::string::npos ? 0 : static_cast<int64_t>(at);
    if (at != std::string::npos) cursor = at + t.answers[k].size();
    const bool last = k + 1 == t.answers.size();
    RouteText(worker, problem, t.answers[k], offset, r, last && localize);
    if (!r->route_error.empty()) return;
    scores.push_back(r->route.pass_fraction);
  }
  auto reward = credit::ComputeReflectionReward(true, scores);
  if (!reward.ok()) {
    r->route_error = reward.status().ToString();
    return;
  }
  r->reward = reward->overall;
  r->reflection_note = reward->ToString();
}

void GrpoTrainer::Impl::PrepareReferences(const std::vector<size_t>& batch) {
  if (!config.prepare_reference || !config.localize) return;
  for (size_t idx : batch) {
    TrainProblem& p = train[idx];
    if (p.reference_prepared) continue;
    p.reference_prepared = true;
    pool->Submit([this, &p](int w) {
      // Optional: routing computes what it lacks.
      (void)routers[w]->PrepareReference(p.language, p.routing, SettingsFor(p, true), p.cache);
    });
  }
}

}  // namespace egca::trainer
