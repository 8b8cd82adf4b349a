#include "egca/credit/mt_grpo.h"

#include <cmath>
#include <string>

namespace egca::credit {
namespace {

Status CheckShapes(const std::vector<std::vector<double>>& intermediate,
                   const std::vector<double>& outcome) {
  const size_t g = outcome.size();
  for (size_t k = 0; k < intermediate.size(); ++k) {
    if (intermediate[k].size() != g) {
      return InvalidArgument("mt-grpo: intermediate rewards of turn " + std::to_string(k + 1) +
                             " have " + std::to_string(intermediate[k].size()) +
                             " samples, outcome has " + std::to_string(g));
    }
    for (size_t i = 0; i < g; ++i) {
      if (!std::isfinite(intermediate[k][i])) {
        return InvalidArgument("mt-grpo: intermediate reward of sample " + std::to_string(i) +
                               " at turn " + std::to_string(k + 1) + " is not finite");
      }
    }
  }
  for (size_t i = 0; i < g; ++i) {
    if (!std::isfinite(outcome[i])) {
      return InvalidArgument("mt-grpo: outcome reward of sample " + std::to_string(i) +
                             " is not finite");
    }
  }
  return Status::Ok();
}

TurnAdvantages Broadcast(const std::vector<double>& per_sample, int turns) {
  TurnAdvantages out;
  out.num_samples = static_cast<int>(per_sample.size());
  out.num_turns = turns;
  out.advantages.reserve(per_sample.size());
  for (double a : per_sample) out.advantages.emplace_back(turns, a);
  return out;
}

}  // namespace

StatusOr<TurnAdvantages> MtGrpoAdvantages(const std::vector<std::vector<double>>& intermediate,
                                          const std::vector<double>& outcome,
                                          const MtGrpoOptions& options) {
  EGCA_RETURN_IF_ERROR(CheckShapes(intermediate, outcome));
  const int turns = static_cast<int>(intermediate.size()) + 1;  // K
  const size_t g = outcome.size();
  std::vector<std::vector<double>> a_int;  // [K-1][G]
  a_int.reserve(intermediate.size());
  for (const std::vector<double>& row : intermediate) {
    a_int.push_back(GroupAdvantages(row, options.normalization));
  }
  const std::vector<double> a_out = GroupAdvantages(outcome, options.normalization);

  TurnAdvantages out;
  out.num_samples = static_cast<int>(g);
  out.num_turns = turns;
  out.advantages.assign(g, std::vector<double>(turns, 0.0));
  for (size_t i = 0; i < g; ++i) {
    // Backwards: A_(K) = A^O, A_(k) = A^I_(k) + alpha * A_(k+1) expands to the paper's sum.
    double later = a_out[i];
    out.advantages[i][turns - 1] = later;
    for (int k = turns - 2; k >= 0; --k) {
      later = a_int[k][i] + options.alpha * later;
      out.advantages[i][k] = later;
    }
  }
  return out;
}

StatusOr<TurnAdvantages> OutcomeOnlyAdvantages(const std::vector<std::vector<double>>& intermediate,
                                               const std::vector<double>& outcome,
                                               const GroupAdvantageOptions& options) {
  EGCA_RETURN_IF_ERROR(CheckShapes(intermediate, outcome));
  return Broadcast(GroupAdvantages(outcome, options), static_cast<int>(intermediate.size()) + 1);
}

StatusOr<TurnAdvantages> MergedRewardAdvantages(
    const std::vector<std::vector<double>>& intermediate, const std::vector<double>& outcome,
    const GroupAdvantageOptions& options) {
  EGCA_RETURN_IF_ERROR(CheckShapes(intermediate, outcome));
  std::vector<double> merged = outcome;
  for (const std::vector<double>& row : intermediate) {
    for (size_t i = 0; i < merged.size(); ++i) merged[i] += row[i];
  }
  return Broadcast(GroupAdvantages(merged, options), static_cast<int>(intermediate.size()) + 1);
}

StatusOr<std::vector<double>> BroadcastTurnAdvantages(const std::vector<double>& turn_advantages,
                                                      const std::vector<int>& token_turn) {
  std::vector<double> out(token_turn.size(), 0.0);
  for (size_t t = 0; t < token_turn.size(); ++t) {
    const int k = token_turn[t];
    if (k < 0) continue;
    if (static_cast<size_t>(k) >= turn_advantages.size()) {
      return InvalidArgument("mt-grpo: token " + std::to_string(t) + " belongs to turn index " +
                             std::to_string(k) + " but there are " +
                             std::to_string(turn_advantages.size()) + " turns");
    }
    out[t] = turn_advantages[k];
  }
  return out;
}

}  // namespace egca::credit
