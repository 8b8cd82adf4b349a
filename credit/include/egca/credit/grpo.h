// Group-relative advantages (GRPO) and the EGCA reward.
//
// Two normalizations are in use in the papers egca implements:
//   - EGCA eq. 2:            A_i = R_i - mean_j R_j                  (kMeanCentered)
//   - DeepSeekMath / Murphy: A_i = (R_i - mean_j R_j) / (std + eps)  (kMeanStd)
// std is the population standard deviation (divide by G, not G - 1).
#pragma once

#include <vector>

namespace egca::credit {

enum class AdvantageNormalization {
  kMeanCentered,  // EGCA eq. 2
  kMeanStd,       // DeepSeekMath GRPO, Murphy eq. 5, MT-GRPO, ReflexiCoder eq. 10
};

const char* AdvantageNormalizationName(AdvantageNormalization normalization);

struct GroupAdvantageOptions {
  AdvantageNormalization normalization = AdvantageNormalization::kMeanStd;
  // Added to std in kMeanStd. A group whose rewards are all equal (including G = 1) gets
  // exactly zero advantages whatever eps is, so eps = 0 is allowed.
  double eps = 1e-6;
};

struct GroupStats {
  int size = 0;
  double mean = 0.0;
  double std = 0.0;  // population standard deviation
  bool all_equal = true;
};

// Mean and population std of `rewards`. An empty group has size 0 and zeros.
GroupStats ComputeGroupStats(const std::vector<double>& rewards);

// Advantages of one group of G responses to the same prompt, in input order.
// Precondition: rewards are finite. All-equal rewards (and G = 1) give all zeros, never NaN.
std::vector<double> GroupAdvantages(const std::vector<double>& rewards,
                                    const GroupAdvantageOptions& options = {});

// EGCA eq. 1: R(y) = R_hat(y) * I_C(y), with R_hat the fraction of tests passed (in [0, 1]).
double ConstrainedReward(double pass_fraction, bool constraints_satisfied);

// The binary reward (reward.kind = binary, issue 37): 1 iff the program passes every one of
// `tests` >= 1 tests (`passed` == `tests`) and I_C = 1, else 0. No tests: 0.
double BinaryReward(int passed, int tests, bool constraints_satisfied);

}  // namespace egca::credit
