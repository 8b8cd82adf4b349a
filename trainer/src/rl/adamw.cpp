#include "egca/trainer/rl/adamw.h"

#include <ATen/ATen.h>
#include <torch/version.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>

#if TORCH_VERSION_MAJOR > 1 || (TORCH_VERSION_MAJOR == 1 && TORCH_VERSION_MINOR >= 9)
#define EGCA_HAVE_FOREACH 1
#else
#define EGCA_HAVE_FOREACH 0
#endif

namespace egca::trainer {
namespace {

// The key of a parameter's state in Optimizer::state_: LibTorch 1.x keys by the
// TensorImpl's address printed as a string (c10::guts::to_string, an ostream <<), 2.x by
// the address itself. Both are what torch::optim::AdamW uses, so states stay shared.
template <typename Map>
typename Map::key_type StateKey(const Map&, const at::Tensor& p) {
  using Key = typename Map::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;
    s << p.unsafeGetTensorImpl();
    return s.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

}  // namespace

bool MultiTensorAdamW::HasMultiTensorKernels() { return EGCA_HAVE_FOREACH != 0; }

torch::Tensor MultiTensorAdamW::step(LossClosure closure) {
#if !EGCA_HAVE_FOREACH
  return torch::optim::AdamW::step(std::move(closure));
#else
  at::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    auto& options = static_cast<torch::optim::AdamWOptions&>(group.options());
    const double beta1 = std::get<0>(options.betas());
    const double beta2 = std::get<1>(options.betas());
    // The tensors of one multi-tensor call share a device, a dtype and a step count (the
    // bias corrections depend on the step; in a training loop every parameter has the same).
    struct Bucket {
      std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
    };
    std::map<std::tuple<std::string, int, int64_t>, Bucket> buckets;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const at::Tensor& grad = p.grad();
      TORCH_CHECK(!grad.is_sparse(), "AdamW does not support sparse gradients");
      const auto key = StateKey(state_, p);
      auto it = state_.find(key);
      if (it == state_.end()) {
        auto s = std::make_unique<torch::optim::AdamWParamState>();
        s->step(0);
        s->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        s->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        if (options.amsgrad()) s->max_exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        it = state_.emplace(key, std::move(s)).first;
      }
      auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
      s.step(s.step() + 1);
      Bucket& b = buckets[{p.device().str(), static_cast<int>(p.scalar_type()), s.step()}];
      b.params.push_back(p);
      b.grads.push_back(grad);
      b.exp_avgs.push_back(s.exp_avg());
      b.exp_avg_sqs.push_back(s.exp_avg_sq());
      if (options.amsgrad()) b.max_exp_avg_sqs.push_back(s.max_exp_avg_sq());
    }
    for (auto& [key, b] : buckets) {
      const int64_t step = std::get<2>(key);
      // The same arithmetic, op for op, as torch::optim::AdamW::step.
      if (options.weight_decay() != 0) {
        at::_foreach_mul_(b.params, 1 - options.lr() * options.weight_decay());
      }
      const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(step));
      const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(step));
      at::_foreach_mul_(b.exp_avgs, beta1);
      at::_foreach_add_(b.exp_avgs, b.grads, 1 - beta1);
      at::_foreach_mul_(b.exp_avg_sqs, beta2);
      at::_foreach_addcmul_(b.exp_avg_sqs, b.grads, b.grads, 1 - beta2);
      std::vector<at::Tensor> denom;
      if (options.amsgrad()) {
        at::_foreach_maximum_(b.max_exp_avg_sqs, b.exp_avg_sqs);
        denom = at::_foreach_sqrt(b.max_exp_avg_sqs);
      } else {
        denom = at::_foreach_sqrt(b.exp_avg_sqs);
      }
      at::_foreach_div_(denom, std::sqrt(bias_correction2));
      at::_foreach_add_(denom, options.eps());
      at::_foreach_addcdiv_(b.params, b.exp_avgs, denom, -(options.lr() / bias_correction1));
    }
  }
  return loss;
#endif
}

}  // namespace egca::trainer
