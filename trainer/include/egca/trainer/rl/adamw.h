// AdamW through multi-tensor kernels: the same update as torch::optim::AdamW (decoupled
// weight decay, Loshchilov & Hutter 2019), applied to all parameters of a group at once
// with ATen's `_foreach_*` ops instead of one chain of small kernels per parameter.
//
// On CUDA the `_foreach_*` ops are PyTorch's multi-tensor-apply kernels (what the Python
// AdamW uses with foreach=True): a few launches per step for the whole model instead of
// ~8 per parameter tensor. On CPU they loop over the tensors with the same per-tensor
// kernels, so the result is bitwise torch::optim::AdamW's. Where the LibTorch in use has no
// `_foreach_*` ops (before 1.9), step() is torch::optim::AdamW's per-parameter loop.
//
// The state is torch::optim::AdamW's (AdamWParamState: step, exp_avg, exp_avg_sq,
// max_exp_avg_sq, under the same keys) and save()/load() are AdamW's, so an optimizer.pt
// written by either class loads into the other: checkpoints are unchanged.
#pragma once

#include <vector>

#include <torch/optim/adamw.h>

namespace egca::trainer {

class MultiTensorAdamW : public torch::optim::AdamW {
 public:
  explicit MultiTensorAdamW(std::vector<torch::Tensor> params,
                            torch::optim::AdamWOptions defaults = {})
      : torch::optim::AdamW(std::move(params), std::move(defaults)) {}
  explicit MultiTensorAdamW(std::vector<torch::optim::OptimizerParamGroup> groups,
                            torch::optim::AdamWOptions defaults = {})
      : torch::optim::AdamW(std::move(groups), std::move(defaults)) {}

  // One AdamW step for every parameter with a gradient; parameters without one are left
  // alone (their state too), as torch::optim::AdamW does. Sparse gradients are refused.
  torch::Tensor step(LossClosure closure = nullptr) override;

  // True when this build's LibTorch has the `_foreach_*` ops step() uses.
  static bool HasMultiTensorKernels();
};

}  // namespace egca::trainer
