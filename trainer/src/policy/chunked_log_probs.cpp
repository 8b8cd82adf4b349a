#include "chunked_log_probs.h"

#include <torch/autograd.h>

#include <algorithm>

namespace egca::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Logits in float32, or in the weight's dtype when it is wider (float64 runs).
at::ScalarType LogitType(const at::Tensor& weight) {
  return at::promote_types(weight.scalar_type(), at::kFloat);
}

class ChunkedLogProbFunction : public torch::autograd::Function<ChunkedLogProbFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& rows,
                               const at::Tensor& weight, const at::Tensor& targets,
                               int64_t chunk_rows, bool want_entropy) {
    const int64_t m = rows.size(0);
    const at::ScalarType lt = LogitType(weight);
    const auto f32 = rows.options().dtype(lt);
    at::Tensor log_probs = at::empty({m}, f32);
    at::Tensor lse = at::empty({m}, f32);
    at::Tensor entropy = at::empty({want_entropy ? m : 0}, f32);
    for (int64_t b = 0; b < m; b += chunk_rows) {
      const int64_t e = std::min(m, b + chunk_rows);
      const at::Tensor logits = at::linear(rows.slice(0, b, e), weight).to(lt);  // [C, V]
      const at::Tensor l = at::logsumexp(logits, -1, /*keepdim=*/true);                  // [C, 1]
      const at::Tensor log_softmax = logits - l;                                          // [C, V]
      lse.slice(0, b, e).copy_(l.squeeze(1));
      log_probs.slice(0, b, e).copy_(
          log_softmax.gather(1, targets.slice(0, b, e).unsqueeze(1)).squeeze(1));
      if (want_entropy) {
        entropy.slice(0, b, e).copy_(-(log_softmax.exp() * log_softmax).sum(-1));
      }
    }
    ctx->save_for_backward({rows, weight, targets, lse});
    ctx->saved_data["chunk_rows"] = chunk_rows;
    ctx->mark_non_differentiable({entropy});
    return {log_probs, entropy};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& rows = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& targets = saved[2];
    const at::Tensor& lse = saved[3];
    const int64_t chunk_rows = ctx->saved_data["chunk_rows"].toInt();
    const at::ScalarType lt = LogitType(weight);
    const at::Tensor grad = grad_outputs[0].to(lt);  // [M]
    const bool want_rows = ctx->needs_input_grad(0);
    const bool want_weight = ctx->needs_input_grad(1);
    const int64_t m = rows.size(0);
    at::Tensor grad_rows = want_rows ? at::empty_like(rows) : at::Tensor();
    // One chunk: one product straight into the weight's dtype (rounded once, as the
    // unchunked linear's backward). Several: summed in the logits' dtype (float32 for a
    // bf16 weight), rounded once at the end.
    const bool one_chunk = m <= chunk_rows;
    const bool accumulate_wider = !one_chunk && weight.scalar_type() != lt;
    at::Tensor grad_weight;
    if (want_weight && !one_chunk) {
      grad_weight = at::zeros(weight.sizes(), weight.options().dtype(lt));
    }
    for (int64_t b = 0; b < m; b += chunk_rows) {
      const int64_t e = std::min(m, b + chunk_rows);
      const at::Tensor x = rows.slice(0, b, e);                                 // [C, H]
      const at::Tensor g = grad.slice(0, b, e).unsqueeze(1);                    // [C, 1]
      const at::Tensor logits = at::linear(x, weight).to(lt);                   // [C, V]
      // d log p_t / d z = onehot(t) - softmax(z), times the incoming gradient.
      at::Tensor d = (logits - lse.slice(0, b, e).unsqueeze(1)).exp_().mul_(-g);
      d.scatter_add_(1, targets.slice(0, b, e).unsqueeze(1), g);
      const at::Tensor dz = d.to(weight.scalar_type());                          // [C, V]
      if (want_rows) grad_rows.slice(0, b, e).copy_(at::mm(dz, weight));
      if (want_weight) {
        if (one_chunk) {
          grad_weight = at::mm(dz.t(), x);
        } else if (accumulate_wider) {
          grad_weight.add_(at::mm(dz.t(), x));
        } else {
          grad_weight.addmm_(dz.t(), x);
        }
      }
    }
    if (grad_weight.defined() && grad_weight.scalar_type() != weight.scalar_type()) {
      grad_weight = grad_weight.to(weight.scalar_type());
    }
    return {grad_rows, grad_weight, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

int64_t LogitChunkRows(int64_t chunk_bytes, int64_t vocab_size) {
  return std::max<int64_t>(1, chunk_bytes / (std::max<int64_t>(vocab_size, 1) * 4));
}

ChunkedLogProbs ChunkedTokenLogProbs(const at::Tensor& rows, const at::Tensor& weight,
                                     const at::Tensor& targets, int64_t chunk_rows,
                                     bool want_entropy) {
  TORCH_CHECK(rows.dim() == 2 && weight.dim() == 2 && rows.size(1) == weight.size(1),
              "ChunkedTokenLogProbs: rows [M, H] and weight [V, H], got ", rows.sizes(), " and ",
              weight.sizes());
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == rows.size(0),
              "ChunkedTokenLogProbs: targets must be [", rows.size(0), "], got ", targets.sizes());
  TORCH_CHECK(chunk_rows >= 1, "ChunkedTokenLogProbs: chunk_rows must be >= 1");
  variable_list out = ChunkedLogProbFunction::apply(rows, weight, targets.to(at::kLong),
                                                    chunk_rows, want_entropy);
  ChunkedLogProbs r;
  r.log_probs = out[0].to(at::kFloat);
  if (want_entropy) r.entropy = out[1].to(at::kFloat);
  return r;
}

}  // namespace egca::trainer
