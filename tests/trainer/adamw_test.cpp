// MultiTensorAdamW (trainer/include/egca/trainer/rl/adamw.h) against torch::optim::AdamW on
// the same gradients, against PyTorch's Python AdamW (tests/trainer/reference/
// adamw_reference.py, checked-in output), and through optimizer.pt in both directions.
#include <unistd.h>

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/serialize.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/trainer/rl/adamw.h"

namespace egca::trainer {
namespace {

using nlohmann::json;

// offset + scale * sin(0.37 * i + phase) in float64, then float32 (as the script).
at::Tensor Formula(const std::vector<int64_t>& shape, double phase, double scale) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  at::Tensor t = at::empty({n}, at::kDouble);
  auto a = t.accessor<double, 1>();
  for (int64_t i = 0; i < n; ++i) a[i] = scale * std::sin(0.37 * static_cast<double>(i) + phase);
  return t.view(shape).to(at::kFloat);
}

std::vector<at::Tensor> MakeParams(const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<at::Tensor> params;
  for (size_t k = 0; k < shapes.size(); ++k) {
    params.push_back(Formula(shapes[k], 0.1 * static_cast<double>(k), 0.5).requires_grad_(true));
  }
  return params;
}

// The script's gradient of parameter k at step s.
void SetGrads(std::vector<at::Tensor>& params, const std::vector<std::vector<int64_t>>& shapes,
              int s) {
  for (size_t k = 0; k < params.size(); ++k) {
    params[k].mutable_grad() = Formula(shapes[k], 1.3 * s + 0.7 * static_cast<double>(k),
                                       std::pow(10.0, -static_cast<double>(k % 4)));
  }
}

void SetLr(torch::optim::Optimizer& opt, double lr) {
  for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
}

double MaxDiff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, (a[i].detach() - b[i].detach()).abs().max().item<double>());
  }
  return worst;
}

const std::vector<std::vector<int64_t>> kShapes = {{7, 5}, {13}, {3, 4, 2}, {1}};

TEST(MultiTensorAdamW, UsesMultiTensorKernelsWithThisLibTorch) {
  EXPECT_TRUE(MultiTensorAdamW::HasMultiTensorKernels());
}

struct Options {
  double lr, weight_decay;
  bool amsgrad;
};

class AgainstLibTorch : public ::testing::TestWithParam<Options> {};

TEST_P(AgainstLibTorch, SameParametersAndStateAfterEverySteps) {
  const Options o = GetParam();
  auto opts = torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay).amsgrad(o.amsgrad);
  std::vector<at::Tensor> a = MakeParams(kShapes), b = MakeParams(kShapes);
  MultiTensorAdamW ours(a, opts);
  torch::optim::AdamW theirs(b, opts);
  for (int s = 1; s <= 6; ++s) {
    SetGrads(a, kShapes, s);
    SetGrads(b, kShapes, s);
    SetLr(ours, o.lr * s / 6);
    SetLr(theirs, o.lr * s / 6);
    ours.step();
    theirs.step();
    // The bound is 1e-6; on the CPU the per-tensor kernels are the same, so equal.
    ASSERT_LE(MaxDiff(a, b), 1e-6) << "step " << s;
    EXPECT_EQ(MaxDiff(a, b), 0.0) << "step " << s;
  }
  // One state per parameter (what a checkpoint holds; CheckpointsLoadBothWays compares it).
  ASSERT_EQ(ours.state().size(), theirs.state().size());
  // Moved far from the start: the comparison is not of two untouched models.
  EXPECT_GT(MaxDiff(a, MakeParams(kShapes)), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Options, AgainstLibTorch,
                         ::testing::Values(Options{1e-2, 0.0, false}, Options{1e-2, 0.1, false},
                                           Options{3e-3, 0.01, true}));

TEST(MultiTensorAdamW, MatchesPyTorchPythonAdamW) {
  auto text = ReadFile(std::string(EGCA_SOURCE_DIR) +
                       "/tests/trainer/reference/adamw_reference_baseline.json");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const json ref = json::parse(*text);
  const auto shapes = ref["shapes"].get<std::vector<std::vector<int64_t>>>();
  const int steps = ref["steps"].get<int>();
  ASSERT_EQ(ref["cases"].size(), 3u);
  for (const json& c : ref["cases"]) {
    const double lr = c["lr"].get<double>();
    std::vector<at::Tensor> params = MakeParams(shapes);
    MultiTensorAdamW opt(params, torch::optim::AdamWOptions(lr)
                                     .betas({c["betas"][0].get<double>(), c["betas"][1].get<double>()})
                                     .eps(c["eps"].get<double>())
                                     .weight_decay(c["weight_decay"].get<double>())
                                     .amsgrad(c["amsgrad"].get<bool>()));
    for (int s = 1; s <= steps; ++s) {
      SetGrads(params, shapes, s);
      SetLr(opt, lr * s / steps);
      opt.step();
    }
    for (size_t k = 0; k < params.size(); ++k) {
      const auto expected = c["expected"][k].get<std::vector<double>>();
      const at::Tensor got = params[k].detach().reshape(-1).to(at::kDouble);
      ASSERT_EQ(got.numel(), static_cast<int64_t>(expected.size()));
      const double diff = (got - at::tensor(expected, at::kDouble)).abs().max().item<double>();
      EXPECT_LE(diff, 1e-6) << "case lr " << lr << " wd " << c["weight_decay"] << " amsgrad "
                            << c["amsgrad"] << ", parameter " << k;
    }
  }
}

// optimizer.pt written by one class continues in the other exactly as in the writer.
TEST(MultiTensorAdamW, CheckpointsLoadBothWays) {
  const std::string dir = ::testing::TempDir() + "/adamw_ckpt_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  auto opts = torch::optim::AdamWOptions(1e-2).weight_decay(0.05);
  for (int writer = 0; writer < 2; ++writer) {
    std::vector<at::Tensor> p = MakeParams(kShapes);
    std::unique_ptr<torch::optim::AdamW> first =
        writer == 0 ? std::make_unique<MultiTensorAdamW>(p, opts)
                    : std::make_unique<torch::optim::AdamW>(p, opts);
    for (int s = 1; s <= 3; ++s) {
      SetGrads(p, kShapes, s);
      first->step();
    }
    const std::string path = dir + "/optimizer.pt";
    torch::serialize::OutputArchive out;
    first->save(out);
    out.save_to(path);
    // Continue in the writer, and in a fresh optimizer of the other class loaded from disk.
    std::vector<at::Tensor> q;
    for (auto& t : p) q.push_back(t.detach().clone().requires_grad_(true));
    std::unique_ptr<torch::optim::AdamW> second =
        writer == 0 ? std::make_unique<torch::optim::AdamW>(q, opts)
                    : std::make_unique<MultiTensorAdamW>(q, opts);
    torch::serialize::InputArchive in;
    in.load_from(path);
    second->load(in);
    for (int s = 4; s <= 6; ++s) {
      SetGrads(p, kShapes, s);
      SetGrads(q, kShapes, s);
      first->step();
      second->step();
    }
    EXPECT_EQ(MaxDiff(p, q), 0.0) << "writer " << (writer == 0 ? "MultiTensorAdamW" : "AdamW");
    // Without the loaded state the continuation differs: the load carried something.
    std::vector<at::Tensor> r;
    for (auto& t : q) r.push_back(t.detach().clone().requires_grad_(true));
    for (size_t i = 0; i < r.size(); ++i) r[i].detach().copy_(p[i].detach());
    std::vector<at::Tensor> fresh_start;
    for (auto& t : r) fresh_start.push_back(t.detach().clone());
    MultiTensorAdamW fresh(r, opts);
    SetGrads(r, kShapes, 7);
    SetGrads(p, kShapes, 7);
    fresh.step();
    first->step();
    for (size_t i = 0; i < r.size(); ++i) r[i].detach().sub_(fresh_start[i]);
    for (size_t i = 0; i < p.size(); ++i) fresh_start[i] = p[i].detach() - fresh_start[i];
    EXPECT_GT(MaxDiff(r, fresh_start), 1e-5);
  }
  std::filesystem::remove_all(dir);
}

TEST(MultiTensorAdamW, ParametersWithoutGradientsAreLeftAlone) {
  std::vector<at::Tensor> p = MakeParams(kShapes);
  const at::Tensor before = p[1].detach().clone();
  MultiTensorAdamW opt(p, torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
  SetGrads(p, kShapes, 1);
  p[1].mutable_grad() = at::Tensor();
  opt.step();
  EXPECT_TRUE(at::equal(p[1].detach(), before));
  EXPECT_EQ(opt.state().size(), 3u);
  EXPECT_FALSE(at::equal(p[0].detach(), MakeParams(kShapes)[0].detach()));
}

}  // namespace
}  // namespace egca::trainer
