// Credit of a single-turn step: group advantages A_i over every prompt's G samples (EGCA
// eq. 2, or mean/std), then token advantages a_{i,t} (EGCA eq. 6) for every trained record
// (inside every node for multi-turn; the tree's advantages come from multi_turn_tree.cpp).
#include "grpo_trainer_impl.h"

#include <map>

#include "egca/core/mix.h"
#include "egca/credit/grpo.h"

namespace egca::trainer {

namespace {

credit::LocalizationTarget TargetOf(const std::string& name) {
  if (name == "last") return credit::LocalizationTarget::kLastDivergence;
  if (name == "random") return credit::LocalizationTarget::kRandomExecutedBoundary;
  if (name == "uniform") return credit::LocalizationTarget::kUniform;
  return credit::LocalizationTarget::kEarliestDivergence;
}

}  // namespace

void GrpoTrainer::Impl::GroupAdvantages(int64_t n_prompts, std::vector<RolloutRecord>* records,
                                        StepCredit* sc) const {
  const int64_t g = config.group_size;
  const credit::GroupAdvantageOptions adv_options{
      config.normalization == "mean_std" ? credit::AdvantageNormalization::kMeanStd
                                         : credit::AdvantageNormalization::kMeanCentered};
  for (int64_t grp = 0; grp < n_prompts; ++grp) {
    std::vector<double> rewards;
    std::vector<RolloutRecord*> members;
    for (int64_t s = 0; s < g; ++s) {
      RolloutRecord& r = (*records)[static_cast<size_t>(grp * g + s)];
      r.credited_reward = r.reward;
      // egca's own routing failures are not the policy's: no advantage, not in the group.
      if (!r.route_error.empty()) continue;
      rewards.push_back(r.reward);
      members.push_back(&r);
    }
    const auto stats = credit::ComputeGroupStats(rewards);
    ++sc->groups_total;
    if (stats.all_equal) ++sc->zero_variance_groups;
    sc->group_reward_std.push_back(stats.std);
    const auto adv = credit::GroupAdvantages(rewards, adv_options);
    for (size_t k = 0; k < members.size(); ++k) members[k]->advantage = adv[k];
  }
  for (size_t i = 0; i < records->size(); ++i) sc->train.push_back(i);
}

Status GrpoTrainer::Impl::AssignTokenCredit(int64_t step, std::vector<RolloutRecord>* records,
                                            StepCredit* sc) const {
  credit::TokenCreditOptions co;
  co.target = TargetOf(config.target);
  co.soft_weight = config.soft_weight;
  co.renormalize = config.renormalize;
  co.min_confidence = config.min_confidence;
  // Validated names (ValidateGrpoConfig): the parses cannot fail here.
  co.positive_logic =
      credit::ParsePositiveLogicCredit(config.positive_logic).value_or(credit::PositiveLogicCredit::kSpan);
  co.syntax = credit::ParseSyntaxCredit(config.syntax_credit).value_or(credit::SyntaxCredit::kSpan);
  co.seed = SplitMix64(config.seed ^ static_cast<uint64_t>(step));
  // The random target's draws are keyed by the sample's place in the global step (dist/),
  // so a rank draws what one process would: single-turn, the global sample index; multi-
  // turn, (global prompt, position among that prompt's records).
  const int64_t first_global = distribution->ShardOf(config.prompts_per_step).begin;
  std::map<int64_t, uint64_t> seen_in_group;
  for (size_t i : sc->train) {
    RolloutRecord& r = (*records)[i];
    credit::CreditSample s;
    s.mode = r.route_error.empty() ? r.route.mode : credit::FailureMode::kCorrect;
    s.advantage = r.advantage;
    s.token_bytes = r.token_bytes;
    s.code_offset = 0;  // spans were moved into completion bytes when routed
    s.error_span = r.route.error_span;
    s.cause_span = r.route.cause_span;
    s.earliest_divergence = r.route.earliest_divergence;
    s.last_divergence = r.route.last_divergence;
    s.random_boundary = r.route.random_boundary;
    // The router's confidence in the earliest span (absent when it found none).
    if (!r.route.divergence_kind.empty()) s.localization_confidence = r.route.localization_confidence;
    s.sample_index = config.turns > 1 ? (static_cast<uint64_t>(first_global + r.group) << 20) +
                                            seen_in_group[r.group]++
                                      : static_cast<uint64_t>(first_global * config.group_size) + i;
    EGCA_RETURN_IF_ERROR(credit::AssignTokenCreditInto(s, co, &r.credit, &sc->stats));
    if (r.credit.placement == credit::CreditPlacement::kLocalized && !r.token_ids.empty()) {
      sc->span_fraction_sum +=
          static_cast<double>(r.credit.span_token_count) / static_cast<double>(r.token_ids.size());
      ++sc->span_fraction_n;
    }
  }
  return Status::Ok();
}

}  // namespace egca::trainer
