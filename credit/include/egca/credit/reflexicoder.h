// The ReflexiCoder reflection reward (eqs. 3-9): a trajectory is
//   <think>..</think><answer>..</answer>(<reflection>..</reflection><answer>..</answer>)*
// with n reflection cycles, and each answer t = 0..n has a quality r_t (fraction of tests
// passed). The reward gates on format, penalizes long reflection chains, rewards improvement
// between successive answers (later ones weighted more) and efficient improvement.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "egca/core/status.h"

namespace egca::credit {

struct ReflectionFormatOptions {
  int max_reflections = 8;  // n_max: more reflection cycles make the format invalid
  // Whitespace (space, tab, CR, LF) may surround the segments; any other text outside the
  // tags makes the format invalid.
  bool allow_whitespace_between_segments = true;
};

// A parsed trajectory. `answers` has n + 1 entries and `reflections` n when well_formed.
struct ReflectionTrajectory {
  bool well_formed = false;  // F(tau) = 1
  std::string format_error;  // why not, with the byte offset
  std::string think;
  std::vector<std::string> answers;
  std::vector<std::string> reflections;
  int num_reflections() const { return static_cast<int>(reflections.size()); }
};

// Parses a completion. Malformed text is a value (well_formed = false), never an error: a
// missing or unclosed tag, tags out of order, a reflection without its answer, a tag nested
// inside a segment, text outside the segments, or more than max_reflections cycles.
ReflectionTrajectory ParseReflectionTrajectory(std::string_view text,
                                               const ReflectionFormatOptions& options = {});

// Defaults: the paper's Sec. 3.1 values (n0, alpha, beta, gamma, delta, lambda, eta, phi,
// psi, xi) and its Table 3 values for the rest (s, eps, h_pos, h_neg, r_max, tau_q, eps2).
// Table 3 lists phi = 1.0, psi = 0.5 while Sec. 3.1 and the sensitivity study choose
// phi = 0.5, psi = 1.0; egca follows Sec. 3.1.
struct ReflectionRewardOptions {
  int n0 = 5;           // reflection depth without penalty
  double alpha = 0.1;   // polynomial decay strength
  double beta = 2.0;    // polynomial decay curvature
  double gamma = 0.05;  // exponential decay
  double delta = 0.1;   // oscillation magnitude
  double lambda = 0.2;  // weight on later improvements
  double s = 0.1;       // sensitivity of tanh to quality changes
  double eps = 1e-4;    // tolerance: |delta r| <= eps counts as no change
  double h_pos = 0.05;  // bonus for staying at r_max
  double h_neg = 1.0;   // penalty for stagnating below r_max
  double r_max = 1.0;
  double eta = 0.5;    // weight of the improvement term in R_traj
  double tau_q = 1.0;  // quality threshold of the efficiency term
  double eps2 = 1e-6;  // keeps E(n)'s relative term finite
  double phi = 0.5;    // weight of R_traj
  double psi = 1.0;    // weight of E(n)
  double xi = 1.0;     // weight of the format term
};

// Eq. 4. P(n) = 1 for n <= n0, else
//   1/(1 + alpha (n-n0)^beta) * exp(-gamma (n-n0)) * (1 - delta sin(pi/2 (n-n0))).
double CyclePenalty(int n, const ReflectionRewardOptions& options = {});

// Eq. 5. w_t = e^{lambda t} / sum_{k=1..n} e^{lambda k}, t = 1..n (index 0 = t 1). n = 0: empty.
std::vector<double> ImprovementWeights(int n, double lambda);

// Eq. 6. m_t from r_{t-1} and r_t.
double ImprovementSignal(double previous, double current,
                         const ReflectionRewardOptions& options = {});

// Every term of eq. 9, for inspection and logging.
struct ReflectionReward {
  bool format_ok = false;        // F
  int n = 0;                     // reflection cycles
  double penalty = 0.0;          // P(n)
  std::vector<double> weights;   // w_1..w_n
  std::vector<double> signals;   // m_1..m_n
  double trajectory = 0.0;       // R_traj (eq. 7)
  double efficiency = 0.0;       // E(n) (eq. 8)
  double overall = 0.0;          // R_overall (eq. 9)
  std::string ToString() const;  // one line, "F=1 n=2 P=1.0000 ..."
};

// R_overall from the format gate and the qualities r_0..r_n (n + 1 values; n = size - 1).
// When format_ok is false the reward is 0 and `scores` may be empty. INVALID_ARGUMENT when
// format_ok and scores is empty or holds a non-finite value.
StatusOr<ReflectionReward> ComputeReflectionReward(bool format_ok,
                                                   const std::vector<double>& scores,
                                                   const ReflectionRewardOptions& options = {});

}  // namespace egca::credit
