#include "egca/credit/grpo.h"

#include <cmath>

namespace egca::credit {

const char* AdvantageNormalizationName(AdvantageNormalization normalization) {
  switch (normalization) {
    case AdvantageNormalization::kMeanCentered:
      return "mean_centered";
    case AdvantageNormalization::kMeanStd:
      return "mean_std";
  }
  return "?";
}

GroupStats ComputeGroupStats(const std::vector<double>& rewards) {
  GroupStats stats;
  stats.size = static_cast<int>(rewards.size());
  if (rewards.empty()) return stats;
  double sum = 0.0;
  for (double r : rewards) {
    sum += r;
    if (r != rewards.front()) stats.all_equal = false;
  }
  stats.mean = sum / static_cast<double>(rewards.size());
  if (stats.all_equal) {
    // Exactly the common value: sum / G can be off by an ulp, which must not leak into
    // advantages as noise.
    stats.mean = rewards.front();
    return stats;
  }
  double squares = 0.0;
  for (double r : rewards) squares += (r - stats.mean) * (r - stats.mean);
  stats.std = std::sqrt(squares / static_cast<double>(rewards.size()));
  return stats;
}

std::vector<double> GroupAdvantages(const std::vector<double>& rewards,
                                    const GroupAdvantageOptions& options) {
  const GroupStats stats = ComputeGroupStats(rewards);
  std::vector<double> advantages(rewards.size(), 0.0);
  if (stats.all_equal) return advantages;  // no preference signal; avoids 0/0
  const double scale = options.normalization == AdvantageNormalization::kMeanStd
                           ? 1.0 / (stats.std + options.eps)
                           : 1.0;
  for (size_t i = 0; i < rewards.size(); ++i) advantages[i] = (rewards[i] - stats.mean) * scale;
  return advantages;
}

double ConstrainedReward(double pass_fraction, bool constraints_satisfied) {
  return constraints_satisfied ? pass_fraction : 0.0;
}

double BinaryReward(int passed, int tests, bool constraints_satisfied) {
  return tests > 0 && passed == tests && constraints_satisfied ? 1.0 : 0.0;
}

}  // namespace egca::credit
