// The problems a run trains and evaluates on, with their prompts, and which of them a step
// takes.
#include "grpo_trainer_impl.h"

#include <cstdio>
#include <numeric>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "egca/core/mix.h"
#include "egca/datasets/datasets.h"
#include "egca/gates/constraints.h"
#include "egca/trainer/rl/problem_prompt.h"

namespace egca::trainer {

// Problems of a file, with their prompts; bad ones reported and skipped.
StatusOr<std::vector<TrainProblem>> GrpoTrainer::Impl::LoadProblemSet(const std::string& path,
                                                                      const std::string& format,
                                                                      int64_t limit,
                                                                      const char* key) {
  datasets::DatasetOptions o;
  EGCA_ASSIGN_OR_RETURN(o.format, datasets::ParseDatasetFormat(format));
  o.id_prefix = config.id_prefix;
  o.limit = limit;
  for (const auto& f : config.fields)
    EGCA_RETURN_IF_ERROR(datasets::SetAppsPlusField(&o.apps_plus, f));
  if (!fs::exists(path))
    return NotFound(fmt::format("{}: no such file or directory (config key '{}')", path, key));
  datasets::LoadReport report;
  EGCA_ASSIGN_OR_RETURN(auto records, datasets::LoadProblems(path, o, &report));
  for (const auto& b : report.bad)
    std::fprintf(stderr, "egca-train: skipped %s\n", b.ToString().c_str());
  std::optional<Language> forced;
  ParseLanguageChoice(config.lang, &forced);  // validated with the config
  std::vector<TrainProblem> out;
  for (auto& r : records) {
    if (r.references.empty()) {
      std::fprintf(stderr, "egca-train: skipped %s: problem %s has no reference solution\n",
                   r.origin.c_str(), r.id.c_str());
      continue;
    }
    TrainProblem p;
    p.language = RoutedLanguage(r.language, forced);
    p.routing.reference = r.references.front();
    p.routing.tests = r.tests;
    std::vector<gates::ConstraintSpec> specs;
    // Constraints are extracted from Python references only (gates::ExtractConstraints
    // reads Python); C++ problems get none.
    if (config.extract_constraints && p.language == Language::kPython) {
      auto extracted = gates::ExtractConstraints(p.routing.reference, {}, r.prompt);
      if (extracted.ok()) {
        specs = *extracted;
        EGCA_ASSIGN_OR_RETURN(p.routing.constraints, gates::MakeConstraintSet(specs));
      }
    }
    p.user_text = ProblemUserMessage(
        r, InstructionFor(config, p.language),
        config.constraints_in_prompt && !specs.empty() ? gates::PromptSuffix(specs) : "");
    EGCA_ASSIGN_OR_RETURN(p.prompt_text,
                          FormatConversation(chat, config.system_prompt, {{"user", p.user_text}}));
    p.prompt_ids = tokenizer->EncodeIds(p.prompt_text);
    if (static_cast<int64_t>(p.prompt_ids.size()) > config.max_prompt_tokens) {
      return InvalidArgument(
          fmt::format("{}: problem {}: prompt of {} tokens is longer than prompt.max_tokens = {}",
                      r.origin, r.id, p.prompt_ids.size(), config.max_prompt_tokens));
    }
    p.record = std::move(r);
    out.push_back(std::move(p));
  }
  if (out.empty())
    return InvalidArgument(fmt::format("{}: no usable problem (config key '{}')", path, key));
  return out;
}

// Problem indices of step `step`: the concatenation of per-epoch shuffles of the set.
std::vector<size_t> GrpoTrainer::Impl::ProblemsOfStep(int64_t step) const {
  const size_t n = train.size();
  const int64_t per = config.prompts_per_step;
  std::vector<size_t> out;
  int64_t cached_epoch = -1;
  std::vector<size_t> order;
  for (int64_t k = step * per; k < (step + 1) * per; ++k) {
    const int64_t epoch = k / static_cast<int64_t>(n);
    if (epoch != cached_epoch) {
      order.resize(n);
      std::iota(order.begin(), order.end(), 0);
      if (config.shuffle) {
        std::mt19937_64 rng(SplitMix64(config.seed ^ SplitMix64(static_cast<uint64_t>(epoch) + 1)));
        // Fisher-Yates with the generator's raw output: std::shuffle's use of the engine
        // is not specified, so the order would differ between standard libraries.
        for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
      }
      cached_epoch = epoch;
    }
    out.push_back(order[static_cast<size_t>(k % static_cast<int64_t>(n))]);
  }
  return out;
}

std::vector<size_t> GrpoTrainer::Impl::LocalProblemsOfStep(int64_t step) const {
  const std::vector<size_t> global = ProblemsOfStep(step);
  const dist::Shard shard = distribution->ShardOf(static_cast<int64_t>(global.size()));
  return {global.begin() + shard.begin, global.begin() + shard.end};
}

}  // namespace egca::trainer
