// MT-GRPO turn-level advantages (Zeng et al., "Reinforcing multi-turn reasoning in LLM
// agents via turn-level credit assignment") and its two GRPO baselines.
//
// A group of G trajectories with K turns each: turns 1..K-1 earn intermediate rewards R^I,
// turn K earns the outcome reward R^O. MT-GRPO normalizes each turn's rewards separately
// within the group (A = (R - mean) / (std + eps)) and gives turn k (1-based)
//   A_(k) = sum_{l=k}^{K-1} alpha^{l-k} A^I_(l) + alpha^{K-k} A^O,
// so for K = 2: A_turn1 = A^I + alpha A^O and A_turn2 = A^O.
#pragma once

#include <vector>

#include "egca/core/status.h"
#include "egca/credit/grpo.h"

namespace egca::credit {

struct MtGrpoOptions {
  double alpha = 1.0;                   // weight of later turns' advantages on earlier turns
  GroupAdvantageOptions normalization;  // kMeanStd in the paper
};

// Advantages of one group: advantages[i][k] for sample i and turn k (0-based, K turns).
struct TurnAdvantages {
  int num_samples = 0;
  int num_turns = 0;
  std::vector<std::vector<double>> advantages;  // [G][K]
};

// intermediate[k][i] is R^I of sample i at turn k+1 (K-1 rows of G), outcome[i] is R^O.
// INVALID_ARGUMENT when the rows do not all have G entries or a reward is not finite.
StatusOr<TurnAdvantages> MtGrpoAdvantages(const std::vector<std::vector<double>>& intermediate,
                                          const std::vector<double>& outcome,
                                          const MtGrpoOptions& options = {});

// GRPO-OR: the outcome advantage A^O on every turn (intermediate rewards ignored).
StatusOr<TurnAdvantages> OutcomeOnlyAdvantages(const std::vector<std::vector<double>>& intermediate,
                                               const std::vector<double>& outcome,
                                               const GroupAdvantageOptions& options = {});

// GRPO-MR: the merged reward R^O + sum_k R^I_(k), normalized, on every turn.
StatusOr<TurnAdvantages> MergedRewardAdvantages(
    const std::vector<std::vector<double>>& intermediate, const std::vector<double>& outcome,
    const GroupAdvantageOptions& options = {});

// Token advantages of one trajectory from its per-turn advantages: token t gets
// turn_advantages[token_turn[t]]; a negative turn index (prompt, feedback, tool output)
// gets 0. INVALID_ARGUMENT for a turn index >= turn_advantages.size().
StatusOr<std::vector<double>> BroadcastTurnAdvantages(const std::vector<double>& turn_advantages,
                                                      const std::vector<int>& token_turn);

}  // namespace egca::credit
