// The optimization step: mu passes of AdamW over a step's trained records in micro-batches
// (GrpoLoss against pi_old and the frozen reference), gradients summed over ranks, clipped,
// learning rate scheduled.
#include "grpo_trainer_impl.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/serialize.h>

#include "egca/credit/token_credit.h"
#include "egca/trainer/rl/cancellation.h"
#include "egca/trainer/rl/grpo_loss.h"
#include "egca/trainer/rl/loss_normalization.h"

namespace egca::trainer {

double ScheduledLearningRate(double peak, int64_t step, int64_t warmup, int64_t total, bool decay) {
  if (warmup > 0 && step < warmup)
    return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (!decay || total <= warmup) return peak;
  const double left = static_cast<double>(total - step) / static_cast<double>(total - warmup);
  return peak * std::clamp(left, 0.0, 1.0);
}

namespace {

// EGCA_DUMP_GRADIENTS=DIR (tests/trainer/dist_e2e_slow_test.cpp): the run's first optimizer
// step writes DIR/rank-R.pt (a torch::serialize archive) with, per parameter NAME (dots
// written as '_', which archive keys cannot hold), "grad_NAME" (the gradient summed over
// micro-batches and ranks, before clipping: what AllReduceGradients must make equal to one
// process's) and "abs_NAME" (float64: the sum over this rank's micro-batches of |that
// micro-batch's gradient|, the magnitude a bound on summation rounding needs), and
// "micro_batches" (this rank's count). A test hook, not a training setting: nothing else
// reads it.
class GradientDump {
 public:
  GradientDump(DecoderModel& policy, int64_t optimizer_steps) {
    const char* dir = std::getenv("EGCA_DUMP_GRADIENTS");
    if (dir == nullptr || *dir == '\0' || optimizer_steps != 0) return;
    dir_ = dir;
    for (auto& item : policy.named_parameters(/*recurse=*/true)) {
      at::Tensor p = item.value();
      if (!p.requires_grad()) continue;
      at::Tensor sum = at::zeros(p.sizes(), p.options().dtype(at::kDouble));
      // Runs once per backward with that backward's whole gradient of p, before it is added
      // to p.grad (and before dist/'s hooks take it).
      const unsigned hook = p.register_hook(
          [sum](const at::Tensor& g) { sum.add_(g.detach().abs().to(at::kDouble)); });
      std::string key = item.key();
      std::replace(key.begin(), key.end(), '.', '_');
      params_.push_back({key, p, sum, hook});
    }
  }
  bool active() const { return !dir_.empty(); }
  void CountMicroBatch() { ++micro_batches_; }
  // After the gradients are summed over ranks.
  Status Write(int64_t rank) {
    if (!active()) return Status::Ok();
    torch::serialize::OutputArchive archive;
    for (auto& e : params_) {
      e.param.remove_hook(e.hook);
      if (e.param.grad().defined()) archive.write("grad_" + e.name, e.param.grad().detach().to(at::kCPU));
      archive.write("abs_" + e.name, e.abs_sum.to(at::kCPU));
    }
    archive.write("micro_batches", at::tensor({micro_batches_}, at::kLong));
    const std::string path = fmt::format("{}/rank-{}.pt", dir_, rank);
    try {
      archive.save_to(path);
    } catch (const c10::Error& e) {
      return Internal(fmt::format("{}: cannot write the gradient dump: {}", path, e.what_without_backtrace()));
    }
    dir_.clear();
    return Status::Ok();
  }

 private:
  struct Entry {
    std::string name;
    at::Tensor param;    // Borrowed (the policy's).
    at::Tensor abs_sum;  // Owned.
    unsigned hook;
  };
  std::string dir_;
  std::vector<Entry> params_;
  int64_t micro_batches_ = 0;
};

}  // namespace

// mu passes of AdamW over records[train], in micro-batches whose gradients add up to the
// batch's: loss = (1 / batch_samples) sum_i w_i sum_t l_{i,t} (w_i = loss_weight when
// `weighted`, else 1).
Status GrpoTrainer::Impl::UpdatePolicy(DecoderModel& policy,
                                       const std::vector<RolloutRecord>& records,
                                       const std::vector<size_t>& train_set, int64_t batch_samples,
                                       bool weighted, UpdateStats* us) {
  const int64_t n = static_cast<int64_t>(train_set.size());
  // Several ranks: one without trained records still joins every collective below.
  if (n == 0 && distribution->world_size() == 1) return Status::Ok();
  size_t max_len = 1;
  for (size_t i : train_set) max_len = std::max(max_len, records[i].token_ids.size());
  std::vector<credit::TokenCredit> credits;
  credits.reserve(train_set.size());
  for (size_t i : train_set) credits.push_back(records[i].credit);
  const std::vector<float> packed = credit::PackTokenAdvantages(credits, max_len);
  const at::Tensor all_adv = at::from_blob(const_cast<float*>(packed.data()),
                                           {n, static_cast<int64_t>(max_len)}, at::kFloat)
                                 .clone();                                         // [N, L]
  at::Tensor all_old = at::zeros({n, static_cast<int64_t>(max_len)}, at::kFloat);  // [N, L]
  at::Tensor all_w = at::ones({n}, at::kFloat);                                    // [N]
  at::Tensor all_div = at::zeros({n, static_cast<int64_t>(max_len)}, at::kFloat);  // [N, L]
  // loss.normalization: a weight per sample from the whole batch's samples and tokens.
  std::vector<int64_t> lengths;
  for (size_t i : train_set) lengths.push_back(static_cast<int64_t>(records[i].token_ids.size()));
  LossNormalizationBatch norm_batch;
  norm_batch.samples = batch_samples;
  norm_batch.max_new_tokens = config.max_new_tokens;
  const LossNormalization normalization =
      ParseLossNormalization(config.loss_normalization).value_or(LossNormalization::kSequence);
  if (normalization == LossNormalization::kToken) {
    int64_t local_tokens = 0;
    for (int64_t len : lengths) local_tokens += len;
    EGCA_ASSIGN_OR_RETURN(norm_batch.tokens, SumOverRanks(local_tokens));
  }
  const std::vector<double> norm_w = LossNormalizationWeights(lengths, normalization, norm_batch);
  {
    auto a = all_old.accessor<float, 2>();
    auto w = all_w.accessor<float, 1>();
    auto d = all_div.accessor<float, 2>();
    for (int64_t k = 0; k < n; ++k) {
      const RolloutRecord& r = records[train_set[static_cast<size_t>(k)]];
      for (size_t t = 0; t < r.old_log_probs.size() && t < max_len; ++t)
        a[k][static_cast<int64_t>(t)] = r.old_log_probs[t];
      w[k] = static_cast<float>((weighted ? r.loss_weight : 1.0) * norm_w[static_cast<size_t>(k)]);
      const std::vector<bool> div =
          DivergentTokenMask(r.token_bytes, r.route.earliest_divergence,
                             r.route_error.empty() && r.route.mode == credit::FailureMode::kLogic);
      for (size_t t = 0; t < div.size() && t < max_len; ++t)
        if (div[t]) d[k][static_cast<int64_t>(t)] = 1.0f;
    }
  }
  const bool use_weights = weighted || normalization != LossNormalization::kSequence;
  struct MicroBatch {
    int64_t begin, end;
    std::vector<std::vector<int32_t>> prompts, completions;
    at::Tensor ref;  // [mb, L_mb] or undefined
  };
  std::vector<MicroBatch> micro;
  for (int64_t b = 0; b < n; b += config.micro_batch) {
    MicroBatch m{b, std::min(n, b + config.micro_batch), {}, {}, {}};
    for (int64_t k = m.begin; k < m.end; ++k) {
      const auto& r = records[train_set[static_cast<size_t>(k)]];
      m.prompts.push_back(r.prompt_ids);
      m.completions.push_back(r.token_ids);
    }
    if (reference) {
      at::NoGradGuard no_grad;
      m.ref = reference->ScoreCompletions(m.prompts, m.completions).log_probs;
    }
    micro.push_back(std::move(m));
  }
  GrpoLossOptions lo;
  lo.eps_low = config.eps_low;
  lo.eps_high = config.eps_high;
  lo.beta = config.beta;
  lo.batch_samples = batch_samples;
  double kl_sum = 0, clip_low_sum = 0, clip_high_sum = 0, entropy_sum = 0, entropy_div_sum = 0;
  int64_t stat_tokens = 0, entropy_tokens = 0, div_tokens = 0;
  std::vector<at::Tensor> before_log_probs(micro.size());  // pass 0's log pi, for update/kl
  policy.train();
  const int64_t total_optimizer_steps = config.steps * config.mu;
  GradientDump dump(policy, optimizer_steps);
  for (int64_t pass = 0; pass < config.mu; ++pass) {
    optimizer->zero_grad();
    double pass_loss = 0;
    for (size_t mi = 0; mi < micro.size(); ++mi) {
      const MicroBatch& m = micro[mi];
      // The last backward of the pass may start reducing gradient buckets (dist/).
      if (mi + 1 == micro.size()) {
        EGCA_RETURN_IF_ERROR(distribution->BeforeLastBackward(policy.parameters()));
      }
      CompletionLogProbs out =
          policy.ScoreCompletions(m.prompts, m.completions, /*want_entropy=*/pass == 0);
      const int64_t len = out.log_probs.size(1);
      const at::Tensor adv = all_adv.slice(0, m.begin, m.end).slice(1, 0, len).to(device);
      const at::Tensor old = all_old.slice(0, m.begin, m.end).slice(1, 0, len).to(device);
      lo.sample_weights = use_weights ? all_w.slice(0, m.begin, m.end).to(device) : at::Tensor();
      if (pass == 0 && config.update_kl) before_log_probs[mi] = out.log_probs.detach().clone();
      GrpoLossStats ls;
      at::Tensor loss = GrpoLoss(out.log_probs, old, m.ref, adv, out.mask, lo, &ls);
      loss.backward();
      if (pass == 0 && dump.active()) dump.CountMicroBatch();
      pass_loss += ls.loss;
      if (pass == 0) {
        kl_sum += ls.kl * static_cast<double>(ls.tokens);
        clip_low_sum += ls.clip_low * static_cast<double>(ls.tokens);
        clip_high_sum += ls.clip_high * static_cast<double>(ls.tokens);
        stat_tokens += ls.tokens;
        if (out.entropy.defined()) {
          entropy_sum += out.entropy.sum().item<double>();
          entropy_tokens += static_cast<int64_t>(out.mask.sum().item<double>());
          const at::Tensor div =
              all_div.slice(0, m.begin, m.end).slice(1, 0, len).to(device) * out.mask.to(at::kFloat);
          entropy_div_sum += (out.entropy.to(at::kFloat) * div).sum().item<double>();
          div_tokens += static_cast<int64_t>(div.sum().item<double>());
        }
      } else {
        us->ratio_max = std::max(us->ratio_max, ls.ratio_max);
      }
    }
    if (pass == 0) us->loss = pass_loss;
    // The batch's gradient: every rank's summed (one process: unchanged).
    EGCA_RETURN_IF_ERROR(distribution->AllReduceGradients(policy.parameters()));
    if (pass == 0) EGCA_RETURN_IF_ERROR(dump.Write(distribution->rank()));
    std::vector<at::Tensor> params;
    for (auto& p : policy.parameters()) {
      if (p.grad().defined()) params.push_back(p);
    }
    // The global norm before clipping (clip_grad_norm_ returns it; with mu > 1, the last pass's).
    us->grad_norm =
        config.grad_clip > 0
            ? torch::nn::utils::clip_grad_norm_(params, config.grad_clip)
            : torch::nn::utils::clip_grad_norm_(params, std::numeric_limits<double>::infinity());
    us->lr = ScheduledLearningRate(config.lr, optimizer_steps, config.warmup_steps,
                                   total_optimizer_steps, config.lr_decay);
    for (auto& group : optimizer->param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(us->lr);
    }
    optimizer->step();
    ++optimizer_steps;
  }
  // update/kl: KL(pi before || pi after) per token on the step's tokens, which pi before
  // sampled (mu = 1: pi_old), by the k3 estimator r - 1 - log r with r = pi_after / pi_before.
  double update_kl_sum = 0;
  if (config.update_kl) {
    at::NoGradGuard no_grad;
    for (size_t mi = 0; mi < micro.size(); ++mi) {
      const MicroBatch& m = micro[mi];
      CompletionLogProbs after = policy.ScoreCompletions(m.prompts, m.completions);
      const at::Tensor mask = after.mask.to(at::kFloat);
      const at::Tensor log_r = (after.log_probs.to(at::kFloat) - before_log_probs[mi].to(at::kFloat)) * mask;
      update_kl_sum += ((at::exp(log_r) - 1 - log_r) * mask).sum().item<double>();
    }
  }
  if (device.is_cuda()) torch::cuda::synchronize();
  // Statistics of the first pass over every rank's tokens.
  {
    std::vector<double> sums = {us->loss,
                                kl_sum,
                                clip_low_sum,
                                clip_high_sum,
                                entropy_sum,
                                static_cast<double>(stat_tokens),
                                static_cast<double>(entropy_tokens),
                                update_kl_sum,
                                entropy_div_sum,
                                static_cast<double>(div_tokens)};
    EGCA_RETURN_IF_ERROR(distribution->SumScalars(&sums));
    update_kl_sum = sums[7];
    entropy_div_sum = sums[8];
    div_tokens = static_cast<int64_t>(sums[9]);
    us->loss = sums[0];
    kl_sum = sums[1];
    clip_low_sum = sums[2];
    clip_high_sum = sums[3];
    entropy_sum = sums[4];
    stat_tokens = static_cast<int64_t>(sums[5]);
    entropy_tokens = static_cast<int64_t>(sums[6]);
  }
  if (config.mu > 1) {  // a maximum over ranks, not a sum
    std::vector<double> v = {us->ratio_max};
    EGCA_RETURN_IF_ERROR(distribution->MaxScalars(&v));
    us->ratio_max = v[0];
  }
  const double tok = static_cast<double>(std::max<int64_t>(stat_tokens, 1));
  us->kl = stat_tokens > 0 ? kl_sum / tok : 0.0;
  us->clip_low = stat_tokens > 0 ? clip_low_sum / tok : 0.0;
  us->clip_high = stat_tokens > 0 ? clip_high_sum / tok : 0.0;
  us->entropy = entropy_tokens > 0 ? entropy_sum / static_cast<double>(entropy_tokens) : 0.0;
  us->update_kl = stat_tokens > 0 ? update_kl_sum / tok : 0.0;
  us->divergent_tokens = div_tokens;
  us->entropy_divergent = div_tokens > 0 ? entropy_div_sum / static_cast<double>(div_tokens) : 0.0;
  return Status::Ok();
}

StatusOr<int64_t> GrpoTrainer::Impl::SumOverRanks(int64_t local) const {
  std::vector<double> v = {static_cast<double>(local)};
  EGCA_RETURN_IF_ERROR(distribution->SumScalars(&v));
  return static_cast<int64_t>(v[0]);
}

}  // namespace egca::trainer
