// GrpoTrainer::Step: one GRPO step, top to bottom. Every stage is a piece of its own (see
// grpo_trainer_impl.h for where each lives); this file only says in which order they run.
#include "grpo_trainer_impl.h"

namespace egca::trainer {

StatusOr<Scalars> GrpoTrainer::Step() {
  Impl& im = *impl_;
  const GrpoConfig& c = config_;
  const auto t_step = Clock::now();
  StepTimings timing;
  const bool multi_turn = c.turns > 1;

  // 1. Prompts: this rank's share of the step's problems (all of them in one process).
  std::vector<size_t> batch = im.LocalProblemsOfStep(step_);
  rollouts_.clear();
  trees_.clear();
  im.PrepareReferences(batch);

  // 2 + 3. Rollout and routing: the turn-1 group of every prompt, then (multi-turn) the
  //        revisions of every failed node, turn by turn. Dynamic sampling (single-turn)
  //        replaces groups without a reward spread by groups of further prompts.
  StepCredit credit;
  if (c.dynamic_sampling && !multi_turn) {
    EGCA_RETURN_IF_ERROR(
        im.RolloutWithDynamicSampling(*policy_, &batch, step_, &rollouts_, &timing, &credit.sampling));
  } else {
    EGCA_RETURN_IF_ERROR(im.RolloutGroups(*policy_, batch, step_, &rollouts_, &timing));
  }
  if (multi_turn) EGCA_RETURN_IF_ERROR(im.GrowTrees(*policy_, batch, step_, &rollouts_, &timing));
  const int64_t n_prompts = static_cast<int64_t>(batch.size());

  // 4. Credit: group advantages (single-turn) or tree credit (multi-turn), which also say
  //    which records the loss sees; then token credit inside every trained record.
  const auto t_credit = Clock::now();
  if (!multi_turn) {
    im.GroupAdvantages(n_prompts, &rollouts_, &credit);
  } else {
    EGCA_RETURN_IF_ERROR(im.CreditTrees(n_prompts, &rollouts_, &trees_, &credit));
    for (size_t i = 0; i < rollouts_.size(); ++i) {
      if (rollouts_[i].retained) credit.train.push_back(i);
    }
  }
  EGCA_RETURN_IF_ERROR(im.AssignTokenCredit(step_, &rollouts_, &credit));
  timing.credit = Seconds(t_credit);

  // 5. Update: the loss is normalized by the whole step's batch over every rank (trees for
  //    multi-turn, samples otherwise), so gradients summed over ranks are the batch's.
  const auto t_update = Clock::now();
  EGCA_ASSIGN_OR_RETURN(
      const int64_t batch_samples,
      im.SumOverRanks(multi_turn ? n_prompts : static_cast<int64_t>(credit.train.size())));
  Impl::UpdateStats us;
  EGCA_RETURN_IF_ERROR(im.UpdatePolicy(*policy_, rollouts_, credit.train, batch_samples,
                                       /*weighted=*/multi_turn, &us));
  timing.update = Seconds(t_update);
  ++step_;
  ++im.steps_this_session;
  timing.total = Seconds(t_step);
  timings_ = timing;

  // 6. Log: metrics, rollout dump, progress line (7. checkpoints: Train).
  return im.ReportStep(*this, batch, credit, us);
}

}  // namespace egca::trainer
