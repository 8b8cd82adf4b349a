// GrpoLoss against values computed by hand (comments) and against an independent scalar
// implementation of DeepSeekMath's GRPO objective; gradient accumulation; mu > 1 ratios.
#include "egca/trainer/rl/grpo_loss.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "egca/credit/token_credit.h"
#include "egca/trainer/policy/model.h"
#include "model_test_util.h"

namespace egca::trainer {
namespace {

at::Tensor T2(std::vector<float> v, int64_t b, int64_t l) {
  return at::tensor(v, at::kFloat).view({b, l});
}

// Both sides of the clip, by hand (eps = 0.2, beta = 0, old = 0, new = log rho):
//   (0,0) rho 1.5, a  0.1: min(0.15, 1.2*0.1 = 0.12)    = 0.12  -> l = -0.12 (clipped high)
//   (0,1) rho 0.5, a  0.1: min(0.05, 0.8*0.1 = 0.08)    = 0.05  -> l = -0.05 (not clipped)
//   (0,2) rho 1.0, a -0.2: min(-0.2, -0.2)              = -0.2  -> l =  0.20
//   (1,0) rho 0.7, a -0.3: min(-0.21, 0.8*-0.3 = -0.24) = -0.24 -> l =  0.24 (clipped low)
//   (1,1) rho 1.1, a  0.3: min(0.33, 0.33)              = 0.33  -> l = -0.33
//   (1,2) padding
// loss = (-0.12 - 0.05 + 0.2 + 0.24 - 0.33) / B = -0.06 / 2 = -0.03.
// d loss / d log pi at unclipped tokens = -rho * a / B: (0,1) -0.025, (0,2) 0.1, (1,1) -0.165;
// 0 at the clipped tokens (0,0), (1,0) and the padding.
TEST(GrpoLoss, ClippedSurrogateBothSidesByHand) {
  at::Tensor lp = T2({std::log(1.5f), std::log(0.5f), 0.f, std::log(0.7f), std::log(1.1f), 0.f}, 2, 3)
                      .set_requires_grad(true);
  at::Tensor old = at::zeros({2, 3});
  at::Tensor adv = T2({0.1f, 0.1f, -0.2f, -0.3f, 0.3f, 0.f}, 2, 3);
  at::Tensor mask = T2({1, 1, 1, 1, 1, 0}, 2, 3);
  GrpoLossOptions o;
  o.beta = 0;
  GrpoLossStats st;
  at::Tensor loss = GrpoLoss(lp, old, {}, adv, mask, o, &st);
  EXPECT_NEAR(loss.item<double>(), -0.03, 1e-6);
  EXPECT_NEAR(st.clip_low, 1.0 / 5, 1e-9);
  EXPECT_NEAR(st.clip_high, 1.0 / 5, 1e-9);
  EXPECT_EQ(st.tokens, 5);
  loss.backward();
  const std::vector<double> want = {0, -0.025, 0.1, 0, -0.165, 0};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(lp.grad().view({-1})[i].item<double>(), want[i], 1e-6) << i;
}

// Sample weights (one GRPO loss per response group, multi-turn): the same tokens as above
// with w = (0.5, 0.25) and batch_samples = 1: loss = 0.5 * (-0.12 - 0.05 + 0.2)
// + 0.25 * (0.24 - 0.33) = 0.015 - 0.0225 = -0.0075; gradients scale by w_i: (0,1) -0.025,
// (0,2) 0.1, (1,1) -0.0825.
TEST(GrpoLoss, SampleWeightsScaleEachSample) {
  at::Tensor lp = T2({std::log(1.5f), std::log(0.5f), 0.f, std::log(0.7f), std::log(1.1f), 0.f}, 2, 3)
                      .set_requires_grad(true);
  at::Tensor adv = T2({0.1f, 0.1f, -0.2f, -0.3f, 0.3f, 0.f}, 2, 3);
  at::Tensor mask = T2({1, 1, 1, 1, 1, 0}, 2, 3);
  GrpoLossOptions o;
  o.beta = 0;
  o.batch_samples = 1;
  o.sample_weights = at::tensor({0.5f, 0.25f});
  at::Tensor loss = GrpoLoss(lp, at::zeros({2, 3}), {}, adv, mask, o);
  EXPECT_NEAR(loss.item<double>(), -0.0075, 1e-6);
  loss.backward();
  const std::vector<double> want = {0, -0.025, 0.1, 0, -0.0825, 0};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(lp.grad().view({-1})[i].item<double>(), want[i], 1e-6) << i;
  // Weights 1/G with batch_samples = prompts equal the unweighted loss over prompts x G.
  GrpoLossOptions u;
  u.beta = 0;
  GrpoLossOptions w = u;
  w.batch_samples = 1;
  w.sample_weights = at::tensor({0.5f, 0.5f});
  EXPECT_NEAR(GrpoLoss(lp.detach(), at::zeros({2, 3}), {}, adv, mask, w).item<double>(),
              GrpoLoss(lp.detach(), at::zeros({2, 3}), {}, adv, mask, u).item<double>(), 1e-7);
}

// k3 KL: d = log pi_ref - log pi = log 0.25 - log 0.5 = -log 2; KL = e^d - d - 1 = 0.5 + log 2 - 1
// = 0.193147; second token pi = pi_ref: KL 0. With a = 0, beta = 0.1, T = 2, B = 1:
// loss = beta * (0.193147 + 0) / T = 0.00965736.
TEST(GrpoLoss, K3KlByHand) {
  at::Tensor lp = T2({std::log(0.5f), std::log(0.3f)}, 1, 2);
  at::Tensor ref = T2({std::log(0.25f), std::log(0.3f)}, 1, 2);
  GrpoLossOptions o;
  o.beta = 0.1;
  GrpoLossStats st;
  at::Tensor loss = GrpoLoss(lp, lp, ref, at::zeros({1, 2}), at::ones({1, 2}), o, &st);
  const double kl = 0.5 + std::log(2.0) - 1;
  EXPECT_NEAR(loss.item<double>(), 0.1 * kl / 2, 1e-7);
  EXPECT_NEAR(st.kl, kl / 2, 1e-7);  // mean per token
}

// An independent scalar implementation of DeepSeekMath's objective (sequence advantages):
//   L = -(1/G) sum_i (1/|o_i|) sum_t [min(rho A_i, clip(rho) A_i) - beta KL_k3]
double PlainGrpoLoss(const std::vector<std::vector<double>>& lp, const std::vector<std::vector<double>>& old,
                     const std::vector<std::vector<double>>& ref, const std::vector<double>& A, double eps,
                     double beta) {
  double total = 0;
  for (size_t i = 0; i < lp.size(); ++i) {
    double s = 0;
    for (size_t t = 0; t < lp[i].size(); ++t) {
      const double rho = std::exp(lp[i][t] - old[i][t]);
      const double clipped = std::min(std::max(rho, 1 - eps), 1 + eps);
      const double d = ref[i][t] - lp[i][t];
      s += std::min(rho * A[i], clipped * A[i]) - beta * (std::exp(d) - d - 1);
    }
    total += s / static_cast<double>(lp[i].size());
  }
  return -total / static_cast<double>(lp.size());
}

TEST(GrpoLoss, UniformTargetIsPlainGrpo) {
  // Three samples of lengths 3, 1, 2 with the EGCA operator's uniform credit.
  const std::vector<std::vector<double>> lp = {{-0.5, -1.2, -0.1}, {-2.0}, {-0.7, -0.9}};
  const std::vector<std::vector<double>> old = {{-0.6, -1.0, -0.3}, {-1.5}, {-0.7, -1.4}};
  const std::vector<std::vector<double>> ref = {{-0.4, -1.1, -0.2}, {-2.2}, {-0.8, -1.0}};
  const std::vector<double> A = {0.8, -1.1, 0.3};
  const int64_t L = 3;
  at::Tensor tlp = at::zeros({3, L}), told = at::zeros({3, L}), tref = at::zeros({3, L}),
             tadv = at::zeros({3, L}), tmask = at::zeros({3, L});
  for (int i = 0; i < 3; ++i) {
    credit::CreditSample s;
    s.mode = credit::FailureMode::kLogic;
    s.advantage = A[i];
    for (size_t t = 0; t < lp[i].size(); ++t) s.token_bytes.push_back({uint32_t(t), uint32_t(t + 1)});
    auto credit = credit::AssignTokenCredit(s, {credit::LocalizationTarget::kUniform});
    ASSERT_TRUE(credit.ok());
    for (size_t t = 0; t < lp[i].size(); ++t) {
      tlp[i][t] = lp[i][t];
      told[i][t] = old[i][t];
      tref[i][t] = ref[i][t];
      tadv[i][t] = credit->advantages[t];
      tmask[i][t] = 1;
    }
  }
  for (double beta : {0.0, 0.05}) {
    GrpoLossOptions o;
    o.beta = beta;
    const double got = GrpoLoss(tlp, told, tref, tadv, tmask, o).item<double>();
    EXPECT_NEAR(got, PlainGrpoLoss(lp, old, ref, A, 0.2, beta), 1e-6) << "beta " << beta;
  }
}

// Micro-batches with batch_samples = B accumulate exactly the gradient of one batch.
TEST(GrpoLoss, GradientAccumulationEqualsOneBatch) {
  DecoderModel model(testing::TinyConfig(ModelFamily::kQwen3));
  model.InitRandom(7);
  const std::vector<std::vector<int32_t>> prompts = {{5, 6, 7}, {8, 9}, {10, 11, 12, 13}, {14}};
  const std::vector<std::vector<int32_t>> completions = {{20, 21}, {22, 23, 24}, {25}, {26, 27, 28, 29}};
  at::Tensor old, ref;
  {
    at::NoGradGuard ng;
    auto base = model.ScoreCompletions(prompts, completions);
    old = base.log_probs - 0.05 * at::arange(base.log_probs.numel()).view(base.log_probs.sizes()) / 10;
    ref = base.log_probs + 0.1;
  }
  at::Tensor adv = at::randn(old.sizes(), at::TensorOptions().dtype(at::kFloat)) * 0.3;
  GrpoLossOptions o;
  o.beta = 0.05;
  o.batch_samples = 4;
  auto grads = [&](std::vector<std::pair<int, int>> parts) {
    model.zero_grad();
    for (auto [b, e] : parts) {
      std::vector<std::vector<int32_t>> p(prompts.begin() + b, prompts.begin() + e);
      std::vector<std::vector<int32_t>> c(completions.begin() + b, completions.begin() + e);
      auto out = model.ScoreCompletions(p, c);
      const int64_t len = out.log_probs.size(1);
      GrpoLoss(out.log_probs, old.slice(0, b, e).slice(1, 0, len), ref.slice(0, b, e).slice(1, 0, len),
               adv.slice(0, b, e).slice(1, 0, len), out.mask, o)
          .backward();
    }
    std::vector<at::Tensor> g;
    for (auto& p : model.parameters()) g.push_back(p.grad().clone());
    return g;
  };
  auto one = grads({{0, 4}});
  auto two = grads({{0, 2}, {2, 4}});
  auto four = grads({{0, 1}, {1, 2}, {2, 3}, {3, 4}});
  double worst = 0, norm = 0;
  for (size_t i = 0; i < one.size(); ++i) {
    worst = std::max(worst, (one[i] - two[i]).abs().max().item<double>());
    worst = std::max(worst, (one[i] - four[i]).abs().max().item<double>());
    norm = std::max(norm, one[i].abs().max().item<double>());
  }
  EXPECT_GT(norm, 1e-4);  // the comparison is not between zeros
  EXPECT_LT(worst, 1e-6);
}

// mu = 2: the first pass has rho = 1 (pi_old is the policy that scored the batch); after an
// optimizer step the second pass's ratios are exp(log pi_new - log pi_old), checked against
// the tensors directly and its loss against the scalar formula.
TEST(GrpoLoss, SecondPassUsesImportanceRatios) {
  DecoderModel model(testing::TinyConfig(ModelFamily::kQwen3));
  model.InitRandom(3);
  const std::vector<std::vector<int32_t>> prompts = {{5, 6, 7}, {8, 9}};
  const std::vector<std::vector<int32_t>> completions = {{20, 21, 30}, {22, 23}};
  at::Tensor old;
  {
    at::NoGradGuard ng;
    old = model.ScoreCompletions(prompts, completions).log_probs.clone();
  }
  at::Tensor adv = T2({0.4f, 0.4f, 0.4f, -0.6f, -0.6f, 0.f}, 2, 3);
  GrpoLossOptions o;
  o.beta = 0;
  GrpoLossStats first;
  auto out = model.ScoreCompletions(prompts, completions);
  at::Tensor loss = GrpoLoss(out.log_probs, old, {}, adv, out.mask, o, &first);
  EXPECT_NEAR(first.ratio_mean, 1.0, 1e-6);
  EXPECT_NEAR(first.ratio_max, 1.0, 1e-6);
  loss.backward();
  {
    at::NoGradGuard ng;
    for (auto& p : model.parameters()) p.sub_(0.5 * p.grad());  // a large step: ratios move
  }
  auto out2 = model.ScoreCompletions(prompts, completions);
  GrpoLossStats second;
  const double got = GrpoLoss(out2.log_probs, old, {}, adv, out2.mask, o, &second).item<double>();
  const at::Tensor rho = at::exp(out2.log_probs.detach() - old);
  double want = 0, rho_sum = 0;
  int tokens = 0;
  for (int i = 0; i < 2; ++i) {
    for (int t = 0; t < 3; ++t) {
      if (out2.mask[i][t].item<float>() == 0) continue;
      const double r = rho[i][t].item<double>(), a = adv[i][t].item<double>();
      want += -std::min(r * a, std::clamp(r, 0.8, 1.2) * a);
      rho_sum += r;
      ++tokens;
    }
  }
  EXPECT_GT(std::abs(rho_sum / tokens - 1.0), 1e-3);  // the step did change the policy
  EXPECT_NEAR(second.ratio_mean, rho_sum / tokens, 1e-5);
  EXPECT_NEAR(got, want / 2, 1e-6);
}

}  // namespace
}  // namespace egca::trainer
