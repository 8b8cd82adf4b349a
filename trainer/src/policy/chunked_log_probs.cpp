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

// One tile's logits [R, Vs] in the logits' dtype: x [R, H] times the slice w [Vs, H].
// A bf16 weight's product is rounded to bf16 first, as at::linear(...).to(kFloat) does.
at::Tensor TileLogits(const at::Tensor& x, const at::Tensor& w, at::ScalarType lt) {
  at::Tensor z = at::mm(x, w.t());
  return z.scalar_type() == lt ? z : z.to(lt);
}

// Writes `product` into `out` for the first contribution, adds it after.
void Accumulate(at::Tensor out, const at::Tensor& product, bool first) {
  if (first) {
    out.copy_(product);
  } else {
    out.add_(product);
  }
}

class ChunkedLogProbFunction : public torch::autograd::Function<ChunkedLogProbFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& rows,
                               const at::Tensor& weight, const at::Tensor& targets,
                               int64_t tile_rows, int64_t tile_vocab, bool want_entropy) {
    const int64_t m = rows.size(0), v = weight.size(0);
    const at::ScalarType lt = LogitType(weight);
    const auto opts = rows.options().dtype(lt);
    // Per row, over the vocabulary slices seen so far: the running max `run_max`, the sum
    // of exp(z - run_max) `run_sum` and (entropy) the sum of exp(z - run_max) (z - run_max)
    // `run_dot`. Then logsumexp = run_max + log run_sum and entropy = log run_sum -
    // run_dot / run_sum (= logsumexp - E_p[z]).
    at::Tensor run_max = at::empty({m}, opts), run_sum = at::empty({m}, opts);
    at::Tensor run_dot = at::empty({want_entropy ? m : 0}, opts);
    for (int64_t v0 = 0; v0 < v; v0 += tile_vocab) {
      const at::Tensor w = weight.slice(0, v0, std::min(v, v0 + tile_vocab));  // [Vs, H]
      const bool first = v0 == 0;
      for (int64_t r0 = 0; r0 < m; r0 += tile_rows) {
        const int64_t r1 = std::min(m, r0 + tile_rows);
        at::Tensor mx = run_max.slice(0, r0, r1), sm = run_sum.slice(0, r0, r1);
        at::Tensor z = TileLogits(rows.slice(0, r0, r1), w, lt);  // [R, Vs]
        const at::Tensor tile_max = at::amax(z, 1);               // [R]
        if (first) {
          mx.copy_(tile_max);
          z.sub_(mx.unsqueeze(1));  // z - run_max, <= 0
          if (want_entropy) {
            at::Tensor e = z.exp();
            sm.copy_(e.sum(1));
            run_dot.slice(0, r0, r1).copy_(e.mul_(z).sum(1));
          } else {
            sm.copy_(z.exp_().sum(1));
          }
          continue;
        }
        const at::Tensor new_max = at::maximum(mx, tile_max);
        const at::Tensor shift = mx - new_max;  // <= 0: rescales the sums so far
        const at::Tensor scale = shift.exp();
        z.sub_(new_max.unsqueeze(1));
        if (want_entropy) {
          at::Tensor dt = run_dot.slice(0, r0, r1);
          at::Tensor e = z.exp();
          // sum exp(z - new) (z - new) over the old slices = scale (run_dot + shift run_sum).
          dt.add_(sm * shift).mul_(scale).add_(e.mul(z).sum(1));
          sm.mul_(scale).add_(e.sum(1));
        } else {
          sm.mul_(scale).add_(z.exp_().sum(1));
        }
        mx.copy_(new_max);
      }
    }
    const at::Tensor lse = run_max + run_sum.log();  // [M]
    // z_r[t_r] as x_r . W[t_r] in the logits' dtype (products of bf16 values are exact in
    // float32), rounded to a narrower weight's dtype as the product would be.
    at::Tensor target_logit = (rows.to(lt) * weight.index_select(0, targets).to(lt)).sum(1);
    if (weight.scalar_type() != lt) target_logit = target_logit.to(weight.scalar_type()).to(lt);
    at::Tensor log_probs = target_logit - lse;
    at::Tensor entropy = want_entropy ? run_sum.log() - run_dot / run_sum : at::empty({0}, opts);
    ctx->save_for_backward({rows, weight, targets, lse});
    ctx->saved_data["tile_rows"] = tile_rows;
    ctx->saved_data["tile_vocab"] = tile_vocab;
    ctx->mark_non_differentiable({entropy});
    return {log_probs, entropy};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& rows = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& targets = saved[2];
    const at::Tensor& lse = saved[3];
    const int64_t tile_rows = ctx->saved_data["tile_rows"].toInt();
    const int64_t tile_vocab = ctx->saved_data["tile_vocab"].toInt();
    const at::ScalarType wt = weight.scalar_type(), lt = LogitType(weight);
    const bool same = wt == lt;
    const bool want_rows = ctx->needs_input_grad(0);
    const bool want_weight = ctx->needs_input_grad(1);
    if (!want_rows && !want_weight) return variable_list(6);
    const int64_t m = rows.size(0), v = weight.size(0);
    const at::Tensor g = grad_outputs[0].to(lt);  // [M] d loss / d log_probs
    const at::Tensor neg_lse = -lse.unsqueeze(1);  // [M, 1]
    // d log_probs[r] / d z_r = onehot(t_r) - p_r. The dense part, -g_r p_r:
    //   weight: sum_r -g_r p_rv x_r = p^T (-g x), written per vocabulary slice
    //   rows:   -g_r sum_v p_rv W_v = -g_r (p W)_r, with p W accumulated over slices
    const at::Tensor neg_gx = want_weight ? (rows.to(lt) * -g.unsqueeze(1)).to(wt) : at::Tensor();  // [M, H]
    // Every slice of it is written by the first row block (zeros only when there are no rows).
    at::Tensor grad_weight;
    if (want_weight) {
      const auto wopts = weight.options().dtype(lt);
      grad_weight = m > 0 ? at::empty(weight.sizes(), wopts) : at::zeros(weight.sizes(), wopts);
    }
    at::Tensor expected_w = want_rows ? at::empty(rows.sizes(), rows.options().dtype(lt)) : at::Tensor();  // p W
    for (int64_t v0 = 0; v0 < v; v0 += tile_vocab) {
      const int64_t v1 = std::min(v, v0 + tile_vocab);
      const at::Tensor w = weight.slice(0, v0, v1);  // [Vs, H]
      for (int64_t r0 = 0; r0 < m; r0 += tile_rows) {
        const int64_t r1 = std::min(m, r0 + tile_rows);
        const at::Tensor x = rows.slice(0, r0, r1);  // [R, H]
        // p = exp(z - logsumexp), formed in the recomputed logits.
        at::Tensor p = same ? at::addmm(neg_lse.slice(0, r0, r1), x, w.t())
                            : TileLogits(x, w, lt).add_(neg_lse.slice(0, r0, r1));
        p.exp_();
        if (!same) p = p.to(wt);
        if (want_weight) {
          at::Tensor gw = grad_weight.slice(0, v0, v1);  // [Vs, H]
          const at::Tensor ngx = neg_gx.slice(0, r0, r1);
          if (!same) {
            Accumulate(gw, at::mm(p.t(), ngx), r0 == 0);
          } else if (r0 == 0) {
            at::mm_out(gw, p.t(), ngx);
          } else {
            gw.addmm_(p.t(), ngx);
          }
        }
        if (want_rows) {
          at::Tensor ew = expected_w.slice(0, r0, r1);  // [R, H]
          if (!same) {
            Accumulate(ew, at::mm(p, w), v0 == 0);
          } else if (v0 == 0) {
            at::mm_out(ew, p, w);
          } else {
            ew.addmm_(p, w);
          }
        }
      }
    }
    // The one-hot part, g_r at (r, t_r).
    at::Tensor grad_rows;
    if (want_rows) {
      grad_rows = (weight.index_select(0, targets).to(lt) - expected_w).mul_(g.unsqueeze(1)).to(wt);
    }
    if (want_weight) {
      grad_weight.index_add_(0, targets, rows.to(lt) * g.unsqueeze(1));
      if (!same) grad_weight = grad_weight.to(wt);
    }
    variable_list grads(6);
    grads[0] = grad_rows;
    grads[1] = grad_weight;
    return grads;
  }
};

}  // namespace

LogitTile LogitTileFor(int64_t tile_bytes, int64_t m, int64_t vocab_size) {
  constexpr int64_t kMaxTileRows = 512;
  const int64_t v = std::max<int64_t>(vocab_size, 1);
  m = std::max<int64_t>(m, 1);
  const int64_t blocks = (m + kMaxTileRows - 1) / kMaxTileRows;
  LogitTile tile;
  tile.rows = (m + blocks - 1) / blocks;
  tile.vocab = std::clamp<int64_t>(tile_bytes / (tile.rows * 4), 1, v);
  if (tile.vocab == v) tile.rows = std::clamp<int64_t>(tile_bytes / (v * 4), 1, m);
  return tile;
}

ChunkedLogProbs ChunkedTokenLogProbs(const at::Tensor& rows, const at::Tensor& weight,
                                     const at::Tensor& targets, LogitTile tile, bool want_entropy) {
  TORCH_CHECK(rows.dim() == 2 && weight.dim() == 2 && rows.size(1) == weight.size(1),
              "ChunkedTokenLogProbs: rows [M, H] and weight [V, H], got ", rows.sizes(), " and ",
              weight.sizes());
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == rows.size(0),
              "ChunkedTokenLogProbs: targets must be [", rows.size(0), "], got ", targets.sizes());
  TORCH_CHECK(tile.rows >= 1 && tile.vocab >= 1,
              "ChunkedTokenLogProbs: a tile needs at least one row and one column, got ", tile.rows,
              " x ", tile.vocab);
  variable_list out = ChunkedLogProbFunction::apply(rows.contiguous(), weight.contiguous(),
                                                    targets.to(at::kLong), tile.rows, tile.vocab,
                                                    want_entropy);
  ChunkedLogProbs r;
  r.log_probs = out[0].to(at::kFloat);
  if (want_entropy) r.entropy = out[1].to(at::kFloat);
  return r;
}

}  // namespace egca::trainer
