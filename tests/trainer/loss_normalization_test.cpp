// loss.normalization (issue 23): the weights of rl/loss_normalization.h fed to GrpoLoss give
// the three losses computed by hand: sequence (GRPO/EGCA), token (DAPO), constant (Dr. GRPO).
#include "egca/trainer/rl/loss_normalization.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "egca/trainer/rl/grpo_loss.h"

namespace egca::trainer {
namespace {

at::Tensor T2(std::vector<float> v, int64_t b, int64_t l) {
  return at::tensor(v, at::kFloat).view({b, l});
}

at::Tensor Weights(const std::vector<int64_t>& lengths, LossNormalization n,
                   const LossNormalizationBatch& batch) {
  std::vector<float> w;
  for (double x : LossNormalizationWeights(lengths, n, batch)) w.push_back(static_cast<float>(x));
  return at::tensor(w, at::kFloat);
}

TEST(LossNormalization, ParsesItsThreeNames) {
  for (auto n :
       {LossNormalization::kSequence, LossNormalization::kToken, LossNormalization::kConstant}) {
    EXPECT_EQ(ParseLossNormalization(LossNormalizationName(n)), n);
  }
  EXPECT_FALSE(ParseLossNormalization("dr_grpo").has_value());
  EXPECT_FALSE(ParseLossNormalization("").has_value());
}

// Weights by hand: T = (2, 1), B = 2, N = 3, L_max = 4.
//   sequence (1, 1); token B T_i / N = (4/3, 2/3); constant T_i / L_max = (0.5, 0.25).
TEST(LossNormalization, WeightsByHand) {
  const LossNormalizationBatch b{2, 3, 4};
  EXPECT_EQ(LossNormalizationWeights({2, 1}, LossNormalization::kSequence, b),
            (std::vector<double>{1, 1}));
  const auto tok = LossNormalizationWeights({2, 1}, LossNormalization::kToken, b);
  EXPECT_NEAR(tok[0], 4.0 / 3, 1e-15);
  EXPECT_NEAR(tok[1], 2.0 / 3, 1e-15);
  EXPECT_EQ(LossNormalizationWeights({2, 1}, LossNormalization::kConstant, b),
            (std::vector<double>{0.5, 0.25}));
  // Nothing to divide by: weights 0, never inf.
  EXPECT_EQ(LossNormalizationWeights({0}, LossNormalization::kToken, {1, 0, 4}),
            (std::vector<double>{0}));
  EXPECT_EQ(LossNormalizationWeights({2}, LossNormalization::kConstant, {1, 2, 0}),
            (std::vector<double>{0}));
}

// Two samples with uniform credit, rho = 1 (log pi = log pi_old), beta = 0, so l_{i,t} = -a_{i,t}:
//   sample 0: T = 2, A = 0.6, a = (0.3, 0.3);  sample 1: T = 1, A = -0.3, a = (-0.3).
//   sequence: (1/B) sum_i sum_t l          = (1/2) (-0.6 + 0.3)             = -0.15
//   token:    (1/N) sum_i sum_t -A_i       = (1/3) (-0.6 - 0.6 + 0.3)       = -0.3
//   constant: (1/(B L_max)) sum_i sum_t -A_i, L_max = 4 = (1/8) (-1.2 + 0.3) = -0.1125
// Gradients d loss / d log pi_{i,t} = -rho a_eff / norm: token -A_i / N: (-0.2, -0.2, 0.1);
// constant -A_i / (B L_max): (-0.075, -0.075, 0.0375); sequence -a_{i,t} / B: (-0.15, -0.15, 0.15).
TEST(LossNormalization, ThreeLossesByHand) {
  const at::Tensor adv = T2({0.3f, 0.3f, -0.3f, 0.f}, 2, 2);
  const at::Tensor mask = T2({1, 1, 1, 0}, 2, 2);
  const at::Tensor old = T2({-0.7f, -1.2f, -0.4f, 0.f}, 2, 2);
  const LossNormalizationBatch batch{2, 3, 4};
  struct Case {
    LossNormalization n;
    double loss;
    std::vector<double> grad;
  };
  for (const Case& c : {Case{LossNormalization::kSequence, -0.15, {-0.15, -0.15, 0.15, 0}},
                        Case{LossNormalization::kToken, -0.3, {-0.2, -0.2, 0.1, 0}},
                        Case{LossNormalization::kConstant, -0.1125, {-0.075, -0.075, 0.0375, 0}}}) {
    at::Tensor lp = old.clone().set_requires_grad(true);
    GrpoLossOptions o;
    o.beta = 0;
    o.batch_samples = batch.samples;
    o.sample_weights = Weights({2, 1}, c.n, batch);
    at::Tensor loss = GrpoLoss(lp, old, {}, adv, mask, o);
    EXPECT_NEAR(loss.item<double>(), c.loss, 1e-6) << LossNormalizationName(c.n);
    loss.backward();
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(lp.grad().view({-1})[i].item<double>(), c.grad[i], 1e-6)
          << LossNormalizationName(c.n) << i;
  }
}

// Micro-batches: each part weighted with the whole batch's B and N adds up to the batch's loss.
TEST(LossNormalization, MicroBatchesAddUpToTheBatch) {
  const at::Tensor lp = T2({-0.5f, -1.2f, -0.1f, -2.0f, 0.f, 0.f, -0.7f, -0.9f, 0.f}, 3, 3);
  const at::Tensor old = T2({-0.6f, -1.0f, -0.3f, -1.5f, 0.f, 0.f, -0.7f, -1.4f, 0.f}, 3, 3);
  const at::Tensor adv = T2({0.2f, 0.3f, 0.1f, -0.9f, 0.f, 0.f, 0.4f, -0.1f, 0.f}, 3, 3);
  const at::Tensor mask = T2({1, 1, 1, 1, 0, 0, 1, 1, 0}, 3, 3);
  const std::vector<int64_t> lengths = {3, 1, 2};
  const LossNormalizationBatch batch{3, 6, 8};
  for (auto n :
       {LossNormalization::kSequence, LossNormalization::kToken, LossNormalization::kConstant}) {
    GrpoLossOptions o;
    o.beta = 0;
    o.batch_samples = 3;
    o.sample_weights = Weights(lengths, n, batch);
    const double whole = GrpoLoss(lp, old, {}, adv, mask, o).item<double>();
    double parts = 0;
    for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 1}, {1, 3}}) {
      o.sample_weights = Weights({lengths.begin() + b, lengths.begin() + e}, n, batch);
      parts += GrpoLoss(lp.slice(0, b, e), old.slice(0, b, e), {}, adv.slice(0, b, e),
                        mask.slice(0, b, e), o)
                   .item<double>();
    }
    EXPECT_NEAR(parts, whole, 1e-6) << LossNormalizationName(n);
  }
}

// The KL term follows the normalization: token gives beta * sum KL / N. Sample 0 (T = 2) has
// k3 KL = 0.5 + log 2 - 1 = 0.193147 on its first token (pi 0.5, pi_ref 0.25), sample 1 (T = 1)
// none; a = 0, beta = 0.1, B = 2, N = 3: loss = 0.1 * 0.193147 / 3 = 0.00643824.
// Sequence for comparison: (1/B) beta KL / T_0 = 0.5 * 0.1 * 0.193147 / 2 = 0.00482868.
TEST(LossNormalization, KlTermPerTokenOfTheBatch) {
  const at::Tensor lp = T2({std::log(0.5f), std::log(0.3f), std::log(0.2f), 0.f}, 2, 2);
  const at::Tensor ref = T2({std::log(0.25f), std::log(0.3f), std::log(0.2f), 0.f}, 2, 2);
  const at::Tensor mask = T2({1, 1, 1, 0}, 2, 2);
  const double kl = 0.5 + std::log(2.0) - 1;
  GrpoLossOptions o;
  o.beta = 0.1;
  o.batch_samples = 2;
  o.sample_weights = Weights({2, 1}, LossNormalization::kToken, {2, 3, 4});
  EXPECT_NEAR(GrpoLoss(lp, lp, ref, at::zeros({2, 2}), mask, o).item<double>(), 0.1 * kl / 3, 1e-7);
  o.sample_weights = Weights({2, 1}, LossNormalization::kSequence, {2, 3, 4});
  EXPECT_NEAR(GrpoLoss(lp, lp, ref, at::zeros({2, 2}), mask, o).item<double>(), 0.5 * 0.1 * kl / 2,
              1e-7);
}

}  // namespace
}  // namespace egca::trainer
