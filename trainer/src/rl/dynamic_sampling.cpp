#include "egca/trainer/rl/dynamic_sampling.h"

#include "grpo_trainer_impl.h"

#include <algorithm>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "egca/core/mix.h"
#include "egca/credit/grpo.h"

namespace egca::trainer {

std::vector<size_t> RefillOrder(size_t n_problems, const std::vector<size_t>& step_problems,
                                uint64_t seed, int64_t step) {
  std::vector<bool> taken(n_problems, false);
  for (size_t p : step_problems)
    if (p < n_problems) taken[p] = true;
  std::vector<size_t> order;
  for (size_t p = 0; p < n_problems; ++p)
    if (!taken[p]) order.push_back(p);
  // A stream of its own (salted apart from the epoch shuffles of ProblemsOfStep).
  std::mt19937_64 rng(SplitMix64(seed ^ SplitMix64(0xD15A3D1ULL + static_cast<uint64_t>(step))));
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  return order;
}

StatusOr<std::vector<size_t>> FillBatch(const std::vector<size_t>& first,
                                        const std::vector<size_t>& refill,
                                        int64_t max_extra_prompts, const SampleGroupsFn& sample,
                                        DynamicSamplingStats* stats) {
  const size_t want = first.size();
  std::vector<size_t> kept;
  size_t sampled = 0, next_refill = 0;
  std::vector<size_t> round = first;
  while (!round.empty()) {
    EGCA_ASSIGN_OR_RETURN(const std::vector<bool> spread, sample(round));
    if (spread.size() != round.size()) {
      return Internal(fmt::format("dynamic sampling: {} groups sampled, {} answers", round.size(),
                                  spread.size()));
    }
    for (size_t k = 0; k < round.size(); ++k) {
      if (spread[k] && kept.size() < want) {
        kept.push_back(sampled + k);
      } else {
        ++stats->skipped_groups;
      }
    }
    sampled += round.size();
    stats->sampled_groups += static_cast<int64_t>(round.size());
    // The next round: exactly the groups still missing, within the cap and the order.
    round.clear();
    const int64_t cap_left = max_extra_prompts - stats->extra_prompts;
    const size_t missing = want - kept.size();
    const size_t n = std::min({missing, static_cast<size_t>(std::max<int64_t>(cap_left, 0)),
                               refill.size() - next_refill});
    for (size_t k = 0; k < n; ++k) round.push_back(refill[next_refill++]);
    if (!round.empty()) {
      ++stats->refill_rounds;
      stats->extra_prompts += static_cast<int64_t>(round.size());
    }
  }
  stats->kept_groups = static_cast<int64_t>(kept.size());
  stats->cap_reached = kept.size() < want;
  return kept;
}

Status GrpoTrainer::Impl::RolloutWithDynamicSampling(DecoderModel& policy,
                                                     std::vector<size_t>* batch, int64_t step,
                                                     std::vector<RolloutRecord>* records,
                                                     StepTimings* timing,
                                                     DynamicSamplingStats* stats) {
  const int64_t g = config.group_size;
  const std::vector<size_t> refill = RefillOrder(train.size(), *batch, config.seed, step);
  std::vector<RolloutRecord> sampled;  // every group of every round, job-major
  std::vector<size_t> sampled_problems;
  int64_t round = 0;
  auto sample = [&](const std::vector<size_t>& problems) -> StatusOr<std::vector<bool>> {
    if (round > 0) PrepareReferences(problems);
    std::vector<PromptJob> jobs;
    for (size_t p : problems) {
      TrainProblem& problem = train[p];
      jobs.push_back({&problem, problem.prompt_ids, problem.prompt_text, problem.record.id,
                      static_cast<int64_t>(sampled_problems.size() + jobs.size()), 1, -1});
    }
    // Round 0 samples exactly what a step without dynamic sampling samples; refill round r
    // has a stream of its own (GenerateAndRoute seeds from step << 20: r << 32 lands above
    // every step number).
    std::vector<RolloutRecord> recs;
    EGCA_RETURN_IF_ERROR(GenerateAndRoute(policy, jobs, g, step + (round << 32), 1, &recs, timing));
    ++round;
    std::vector<bool> spread;
    for (size_t j = 0; j < problems.size(); ++j) {
      std::vector<double> rewards;
      for (int64_t s = 0; s < g; ++s) {
        const RolloutRecord& r = recs[j * static_cast<size_t>(g) + static_cast<size_t>(s)];
        if (r.route_error.empty()) rewards.push_back(r.reward);  // as GroupAdvantages counts
      }
      spread.push_back(!credit::ComputeGroupStats(rewards).all_equal);
      sampled_problems.push_back(problems[j]);
    }
    for (auto& r : recs) sampled.push_back(std::move(r));
    return spread;
  };
  EGCA_ASSIGN_OR_RETURN(const std::vector<size_t> kept,
                        FillBatch(*batch, refill, config.max_extra_prompts, sample, stats));
  records->clear();
  batch->clear();
  for (size_t j = 0; j < kept.size(); ++j) {
    for (int64_t s = 0; s < g; ++s) {
      RolloutRecord& r = sampled[kept[j] * static_cast<size_t>(g) + static_cast<size_t>(s)];
      r.group = static_cast<int64_t>(j);
      records->push_back(std::move(r));
    }
    batch->push_back(sampled_problems[kept[j]]);
  }
  return Status::Ok();
}

}  // namespace egca::trainer
