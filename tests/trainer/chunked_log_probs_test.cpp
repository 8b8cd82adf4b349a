// Chunked log-probs (trainer/src/policy/chunked_log_probs.h): the values, entropies and
// gradients of the unchunked formulation (log_softmax over every [rows, V] logit, then
// gather), for any chunk size; and DecoderModel::ScoreCompletions / TokenLogProbs through
// chunks equal to the path before chunking (set_logit_chunk_bytes(0)).
#include "chunked_log_probs.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <vector>

#include "egca/trainer/policy/model.h"
#include "egca/trainer/rl/grpo_loss.h"
#include "model_test_util.h"

namespace egca::trainer {
namespace {

using testing::TinyConfig;

double MaxAbs(const at::Tensor& a) { return a.abs().max().item<double>(); }

struct Reference {
  at::Tensor log_probs, entropy, grad_rows, grad_weight;
};

// The unchunked formulation with autograd: log_softmax(rows W^T).gather(targets).
Reference Unchunked(const at::Tensor& rows0, const at::Tensor& weight0, const at::Tensor& targets,
                    const at::Tensor& upstream) {
  at::Tensor rows = rows0.detach().clone().requires_grad_(true);
  at::Tensor weight = weight0.detach().clone().requires_grad_(true);
  at::Tensor ls = at::log_softmax(at::linear(rows, weight).to(at::kFloat), -1);
  Reference r;
  r.log_probs = ls.gather(1, targets.unsqueeze(1)).squeeze(1);
  r.entropy = -(ls.exp() * ls).sum(-1).detach();
  (r.log_probs * upstream).sum().backward();
  r.log_probs = r.log_probs.detach();
  r.grad_rows = rows.grad();
  r.grad_weight = weight.grad();
  return r;
}

TEST(ChunkedLogProbs, ValuesEntropyAndGradientsMatchTheUnchunkedFormulaForEveryChunkSize) {
  at::manual_seed(3);
  const int64_t m = 13, h = 16, v = 50;
  const at::Tensor rows0 = at::randn({m, h});
  const at::Tensor weight0 = at::randn({v, h}) * 0.7;
  const at::Tensor targets = at::randint(0, v, {m}, at::kLong);
  const at::Tensor upstream = at::randn({m});  // a non-uniform d loss / d log p
  const Reference ref = Unchunked(rows0, weight0, targets, upstream);
  // Row blocks and vocabulary slices of every kind: one tile; whole-vocabulary row chunks;
  // slices that divide V and that do not (the last one short); single rows and columns.
  const std::vector<LogitTile> tiles = {{100, 100}, {13, 50}, {4, 50}, {1, 50},  {13, 7},
                                        {5, 10},   {4, 49},  {1, 1},  {13, 1}, {100, 3}};
  for (const LogitTile& tile : tiles) {
    at::Tensor rows = rows0.clone().requires_grad_(true);
    at::Tensor weight = weight0.clone().requires_grad_(true);
    ChunkedLogProbs out = ChunkedTokenLogProbs(rows, weight, targets, tile, /*want_entropy=*/true);
    const std::string name = std::to_string(tile.rows) + " x " + std::to_string(tile.vocab);
    ASSERT_EQ(out.log_probs.sizes(), ref.log_probs.sizes());
    EXPECT_LE(MaxAbs(out.log_probs - ref.log_probs), 1e-5) << "tile " << name;
    EXPECT_LE(MaxAbs(out.entropy - ref.entropy), 1e-5) << "tile " << name;
    EXPECT_FALSE(out.entropy.requires_grad());
    (out.log_probs * upstream).sum().backward();
    EXPECT_LE(MaxAbs(rows.grad() - ref.grad_rows), 1e-5 * (1 + MaxAbs(ref.grad_rows)))
        << "tile " << name;
    EXPECT_LE(MaxAbs(weight.grad() - ref.grad_weight), 1e-5 * (1 + MaxAbs(ref.grad_weight)))
        << "tile " << name;
  }
  // A frozen weight (a reference model): gradients reach the rows only.
  at::Tensor rows = rows0.clone().requires_grad_(true);
  ChunkedLogProbs out = ChunkedTokenLogProbs(rows, weight0, targets, {4, 7}, false);
  EXPECT_FALSE(out.entropy.defined());
  (out.log_probs * upstream).sum().backward();
  EXPECT_LE(MaxAbs(rows.grad() - ref.grad_rows), 1e-5 * (1 + MaxAbs(ref.grad_rows)));
}

// Tile shapes from a byte budget (hand-computed): rows in equal blocks of at most 512, the
// slice of the vocabulary that fills the budget, whole-vocabulary rows when it holds V.
TEST(ChunkedLogProbs, TileShapeFromTheByteBudget) {
  auto shape = [](int64_t bytes, int64_t m, int64_t v) {
    const LogitTile t = LogitTileFor(bytes, m, v);
    return std::vector<int64_t>{t.rows, t.vocab};
  };
  // 768 rows: 2 blocks of 384; 1 MiB / (384 x 4 bytes) = 682 columns.
  EXPECT_EQ(shape(1 << 20, 768, 151936), (std::vector<int64_t>{384, 682}));
  // 1,000 rows: 2 blocks of 500; 4 MiB / 2,000 = 2,097 columns.
  EXPECT_EQ(shape(4 << 20, 1000, 151936), (std::vector<int64_t>{500, 2097}));
  // 1 GiB holds the whole vocabulary for 512 rows: 2^30 / (151,936 x 4) = 1,766 rows.
  EXPECT_EQ(shape(int64_t{1} << 30, 8192, 151936), (std::vector<int64_t>{1766, 151936}));
  EXPECT_EQ(shape(int64_t{1} << 30, 100, 151936), (std::vector<int64_t>{100, 151936}));
  // Budgets below one row of one column still make a 1-column tile.
  EXPECT_EQ(shape(0, 3, 5), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(shape(100, 10, 1000), (std::vector<int64_t>{10, 2}));
}

// bfloat16 weights, several chunks: the weight's gradient is summed over chunks in float32
// and rounded once, so it is as close to the float32 gradient as one bf16 rounding allows.
TEST(ChunkedLogProbs, LowPrecisionWeightGradientIsRoundedOnce) {
  at::manual_seed(4);
  const int64_t m = 40, h = 8, v = 30;
  const at::Tensor rows0 = at::randn({m, h});
  const at::Tensor weight0 = at::randn({v, h});
  const at::Tensor targets = at::randint(0, v, {m}, at::kLong);
  const at::Tensor upstream = at::ones({m});
  at::Tensor rows = rows0.to(at::kBFloat16).requires_grad_(true);
  at::Tensor weight = weight0.to(at::kBFloat16).requires_grad_(true);
  ChunkedLogProbs out = ChunkedTokenLogProbs(rows, weight, targets, {3, 7}, false);
  (out.log_probs * upstream).sum().backward();
  ASSERT_EQ(weight.grad().scalar_type(), at::kBFloat16);
  const Reference ref = Unchunked(rows0.to(at::kBFloat16).to(at::kFloat),
                                  weight0.to(at::kBFloat16).to(at::kFloat), targets, upstream);
  // bf16 keeps 8 significant bits: |error| <= 2^-8 relative, plus the bf16 logits' own.
  EXPECT_LE(MaxAbs(weight.grad().to(at::kFloat) - ref.grad_weight),
            0.05 * MaxAbs(ref.grad_weight));
}

// ScoreCompletions through chunks (3 rows each here, so every micro-batch spans several)
// against the path before chunking: log-probs, entropy, mask, and every parameter's
// gradient of a GRPO loss.
TEST(ChunkedLogProbs, ScoreCompletionsGradientsEqualTheUnchunkedPath) {
  for (ModelFamily family : {ModelFamily::kQwen2, ModelFamily::kQwen3}) {  // tied, untied
    DecoderModel m(TinyConfig(family));
    m.InitRandom(9, 0.05);
    const std::vector<std::vector<int32_t>> prompts = {{5, 17, 300}, {7}, {100, 200, 3, 4}};
    const std::vector<std::vector<int32_t>> completions = {{9, 8, 7, 6, 5}, {11}, {}};
    const at::Tensor adv = at::tensor({0.7f, -1.3f, 0.4f}).unsqueeze(1).expand({3, 5}).contiguous();
    GrpoLossOptions lo;
    lo.beta = 0;
    auto run = [&](int64_t chunk_bytes, std::vector<at::Tensor>* grads) {
      m.set_logit_chunk_bytes(chunk_bytes);
      for (auto& p : m.parameters()) p.mutable_grad() = at::Tensor();
      CompletionLogProbs out = m.ScoreCompletions(prompts, completions, /*want_entropy=*/true);
      // Shift the old log-probs so the ratios are not all 1 (clipping engages somewhere).
      at::Tensor old = out.log_probs.detach() + 0.1 * at::arange(5).to(at::kFloat);
      GrpoLoss(out.log_probs, old, {}, adv, out.mask, lo).backward();
      for (auto& p : m.parameters()) grads->push_back(p.grad().clone());
      return out;
    };
    std::vector<at::Tensor> g_full, g_chunk;
    CompletionLogProbs full = run(0, &g_full);
    CompletionLogProbs chunked = run(3 * 512 * 4, &g_chunk);
    ASSERT_EQ(full.log_probs.sizes(), chunked.log_probs.sizes());
    EXPECT_TRUE(at::equal(full.mask, chunked.mask));
    EXPECT_LE(MaxAbs(full.log_probs.detach() - chunked.log_probs.detach()), 1e-5);
    EXPECT_LE(MaxAbs(full.entropy - chunked.entropy), 1e-5);
    EXPECT_EQ(MaxAbs(chunked.log_probs.detach() * (1 - chunked.mask)), 0.0);  // padding is 0
    double largest = 0;
    for (size_t i = 0; i < g_full.size(); ++i) {
      largest = std::max(largest, MaxAbs(g_full[i]));
      EXPECT_LE(MaxAbs(g_full[i] - g_chunk[i]), 1e-6 + 1e-4 * MaxAbs(g_full[i]))
          << ModelFamilyName(family) << " parameter " << i;
    }
    EXPECT_GT(largest, 1e-3);  // something was trained
  }
}

TEST(ChunkedLogProbs, TokenLogProbsEqualTheUnchunkedPath) {
  DecoderModel m(TinyConfig(ModelFamily::kLlama));
  m.InitRandom(5, 0.05);
  at::Tensor ids = at::randint(0, 512, {3, 7}, at::kLong);
  at::Tensor mask = at::ones({3, 7}, at::kLong);
  mask[1][0] = 0;
  m.set_logit_chunk_bytes(0);
  const at::Tensor full = m.TokenLogProbs(ids, mask).detach();
  m.set_logit_chunk_bytes(2 * 512 * 4);  // 2 rows per chunk
  const at::Tensor chunked = m.TokenLogProbs(ids, mask).detach();
  EXPECT_LE(MaxAbs(full - chunked), 1e-5);
  EXPECT_GT(MaxAbs(full), 1.0);
}

}  // namespace
}  // namespace egca::trainer
