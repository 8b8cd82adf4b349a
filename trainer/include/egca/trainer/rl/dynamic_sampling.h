// Dynamic sampling (DAPO's, `rollout.dynamic_sampling`): a group whose rewards are all equal
// has advantages 0 and teaches nothing, so it is dropped and the batch is refilled with
// groups of further prompts, round after round, until it holds prompts_per_step groups with
// a reward spread or `max_extra_prompts` extra prompts have been sampled (the cap: the batch
// is then smaller, possibly empty, and the step says so in its metrics).
//
// Where the extra prompts come from: RefillOrder(step) is a shuffle of the training set
// without the step's own prompts, seeded by (run.seed, step) only. The prompts of later
// steps therefore do not depend on how many refills earlier steps needed (every step keeps
// ProblemsOfStep's prompts, so resuming from a checkpoint needs no extra state and two arms
// of one seed see the same first prompts), and the refills of a step are the same on every
// run with the same seed.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "egca/core/status.h"

namespace egca::trainer {

struct DynamicSamplingStats {
  int64_t sampled_groups = 0;  // groups generated this step (first batch + refills)
  int64_t skipped_groups = 0;  // dropped: rewards all equal
  int64_t extra_prompts = 0;   // refill prompts sampled
  int64_t refill_rounds = 0;
  int64_t kept_groups = 0;   // the batch the update sees
  bool cap_reached = false;  // the batch stayed short of prompts_per_step
};

// The training problems (indices < n_problems) not in `step_problems`, shuffled with a
// generator seeded by (seed, step); duplicates in step_problems are fine.
std::vector<size_t> RefillOrder(size_t n_problems, const std::vector<size_t>& step_problems,
                                uint64_t seed, int64_t step);

// Samples and routes groups for `problems` (in order) and says per problem whether its group
// has a reward spread (not all equal). Appends what it sampled; its calls' problems taken
// together are the order in which FillBatch's result indexes them.
using SampleGroupsFn =
    std::function<StatusOr<std::vector<bool>>(const std::vector<size_t>& problems)>;

// Samples `first` (the step's prompts), then refills from `refill` in order, each round
// asking for exactly the groups still missing (never more than the cap left), until
// `first.size()` groups have a spread or the cap or the refill order runs out. Returns the
// positions, in sampling order over all calls, of the groups kept (at most first.size()).
StatusOr<std::vector<size_t>> FillBatch(const std::vector<size_t>& first,
                                        const std::vector<size_t>& refill,
                                        int64_t max_extra_prompts, const SampleGroupsFn& sample,
                                        DynamicSamplingStats* stats);

}  // namespace egca::trainer
