// dist_allreduce: egca's data-parallel gradient path (dist::ProcessGroupDistribution over
// c10d: Gloo on CPU, NCCL on CUDA) on a real model's gradients, on this machine's devices.
//
//   python3 -m torch.distributed.run --nproc_per_node R --no-python
//       build/bench/dist_step/dist_allreduce [--device cpu|cuda] [--shape tiny|small|qwen2.5-0.5b]
//       [--dtype float32|bfloat16] [--backend auto|gloo|nccl] [--batch B] [--seq T]
//       [--steps N] [--warmup W] [--bucket-mb M] [--json FILE]
//
// Without a launcher it runs a world of one through the process group all the same (the
// backend's own cost with nothing to exchange: the only NCCL figure a one-GPU machine gives).
// Every rank computes the same gradients (same weights, same tokens), so the reduced
// gradient must be exactly R x the local one: checked on every parameter after the first
// all-reduce (relative error within the dtype's precision), a failure exits 1.
// Per rank, medians over --steps after --warmup:
//   allreduce   AllReduceGradients alone on a finished backward's gradients: time, bytes,
//               algorithm bandwidth (bytes / time) and bus bandwidth (x 2(R-1)/R, NCCL's
//               convention; 0 for one rank)
//   step+dist   forward, BeforeLastBackward, backward (buckets reduced while it runs),
//               AllReduceGradients: what a training pass costs with the distribution
//   step alone  the same pass with no distribution; overhead = step+dist / step alone
// Rank 0 prints a table and, with --json, writes the figures as one JSON object.
#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "../common/crash_backtrace.h"
#include "../common/fixed_batch.h"
#include "../common/model_shapes.h"
#include "../common/stats.h"
#include "egca/core/remove_tree.h"
#include "egca/trainer/dist/process_group.h"
#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/rl/grpo_loss.h"

using namespace egca::trainer;
namespace fs = std::filesystem;

namespace {

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "egca's data-parallel gradient all-reduce (c10d Gloo / NCCL) on a model's gradients"};
  std::string device_name = "cpu", shape = "tiny", dtype_name = "float32", backend = "auto",
              json_path;
  int64_t batch = 2, seq = 128, steps = 5, warmup = 1, bucket_mb = 25;
  app.add_option("--device", device_name,
                 "cpu or cuda (a rank uses cuda:LOCAL_RANK mod the GPU count)");
  app.add_option("--shape", shape, "tiny, small or qwen2.5-0.5b")
      ->check(CLI::IsMember({"tiny", "small", "qwen2.5-0.5b"}));
  app.add_option("--dtype", dtype_name, "float32 or bfloat16")
      ->check(CLI::IsMember({"float32", "bfloat16"}));
  app.add_option("--backend", backend, "auto (nccl on CUDA, gloo on CPU), gloo or nccl")
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}));
  app.add_option("--batch", batch, "rows per pass")->check(CLI::PositiveNumber);
  app.add_option("--seq", seq, "tokens per row")->check(CLI::Range(2, 1 << 20));
  app.add_option("--steps", steps, "timed repetitions")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed repetitions");
  app.add_option("--bucket-mb", bucket_mb, "gradient bucket cap in MiB")
      ->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "rank 0 writes the figures here");
  CLI11_PARSE(app, argc, argv);
  egca::bench::InstallCrashBacktrace();
  setvbuf(stdout, nullptr, _IOLBF, 0);  // a table printed survives a later crash

  auto env = dist::ReadLaunchEnvironment([](const char* n) { return std::getenv(n); });
  if (!env.ok()) {
    std::fprintf(stderr, "dist_allreduce: %s\n", env.status().ToString().c_str());
    return 2;
  }
  if (env->master_addr.empty()) env->master_addr = "127.0.0.1";
  const bool cuda = device_name.rfind("cuda", 0) == 0;
  if (cuda && !torch::cuda::is_available()) {
    std::fprintf(stderr, "dist_allreduce: --device %s but CUDA is not available\n",
                 device_name.c_str());
    return 2;
  }
  // A rank uses cuda:(LOCAL_RANK mod devices): more ranks than GPUs share them (NCCL refuses
  // two ranks on one GPU; the refusal is part of what this reports).
  const int64_t cuda_index =
      cuda ? env->local_rank %
                 std::max<int64_t>(1, static_cast<int64_t>(torch::cuda::device_count()))
           : 0;
  const at::Device device =
      cuda ? at::Device(at::kCUDA, static_cast<int8_t>(cuda_index)) : at::Device(at::kCPU);
  const at::ScalarType dtype = dtype_name == "bfloat16" ? at::kBFloat16 : at::kFloat;
  const bool writer = env->rank == 0;

  dist::ConnectOptions co;
  co.backend = backend;
  co.cuda = cuda;
  co.cuda_device = cuda_index;
  co.bucket_bytes = bucket_mb << 20;
  co.group_for_one_rank = true;
  if (env->launcher.empty()) env->port = 0;  // alone: any free port
  auto progress = [&](const char* what) {
    std::fprintf(stderr, "[dist_allreduce rank %lld] %s\n", static_cast<long long>(env->rank),
                 what);
  };
  progress("connecting");
  auto d = dist::ConnectProcessGroup(*env, co);
  if (!d.ok()) {
    std::fprintf(stderr, "dist_allreduce: %s\n", d.status().ToString().c_str());
    return 1;
  }
  dist::Distribution& dd = **d;
  progress("connected; writing and loading the checkpoint");

  // Every rank writes its own copy of the same random checkpoint (same seed) and loads it.
  const fs::path dir = fs::temp_directory_path() / fmt::format("egca_dist_allreduce_{}", getpid());
  ModelConfig mc = egca::bench::ModelShape(shape);
  mc.torch_dtype = dtype_name;
  if (auto s = CreateRandomCheckpoint(dir.string(), mc, 5); !s.ok()) {
    std::fprintf(stderr, "dist_allreduce: %s\n", s.ToString().c_str());
    return 1;
  }
  auto model = LoadCheckpoint(dir.string(), LoadOptions(device).set_dtype(dtype));
  std::error_code ec;
  egca::RemoveTree(dir, ec);
  if (!model.ok()) {
    std::fprintf(stderr, "dist_allreduce: %s\n", model.status().ToString().c_str());
    return 1;
  }
  DecoderModel& m = **model;
  m.train();
  std::vector<at::Tensor> params = m.parameters();

  const int64_t prompt = seq / 4 > 0 ? seq / 4 : 1;
  auto fixed = egca::bench::MakeFixedBatch(batch, seq, prompt, mc.vocab_size);
  const auto& prompts = fixed.prompts;
  const auto& completions = fixed.completions;
  at::Tensor adv = fixed.advantages;
  adv = adv.to(device);
  GrpoLossOptions lo;
  lo.beta = 0;
  auto sync = [&] {
    if (cuda) torch::cuda::synchronize();
  };
  auto zero_grads = [&] {
    for (auto& p : params) p.mutable_grad() = at::Tensor();
  };
  // One pass: forward, (hooks), backward, (all-reduce). Returns seconds.
  auto pass = [&](bool distributed) -> double {
    zero_grads();
    sync();
    const auto t0 = std::chrono::steady_clock::now();
    CompletionLogProbs out = m.ScoreCompletions(prompts, completions);
    at::Tensor loss = GrpoLoss(out.log_probs, out.log_probs.detach(), {}, adv, out.mask, lo);
    if (distributed) {
      if (auto s = dd.BeforeLastBackward(params); !s.ok()) throw std::runtime_error(s.ToString());
    }
    loss.backward();
    if (distributed) {
      if (auto s = dd.AllReduceGradients(params); !s.ok()) throw std::runtime_error(s.ToString());
    }
    sync();
    return Seconds(t0);
  };

  const int64_t world = dd.world_size();
  std::vector<double> t_alone, t_dist, t_reduce;
  int64_t reduce_bytes = 0;
  double worst_rel = 0;
  progress("loaded; checking the reduced gradients");
  try {
    // The check: local gradients, then their reduction must be world x local.
    pass(false);
    std::vector<at::Tensor> local;
    for (auto& p : params)
      local.push_back(p.grad().defined() ? p.grad().detach().to(at::kFloat).clone() : at::Tensor());
    const auto before = dd.comm_stats().gradient_bytes;
    if (auto s = dd.AllReduceGradients(params); !s.ok()) throw std::runtime_error(s.ToString());
    sync();
    reduce_bytes = dd.comm_stats().gradient_bytes - before;
    for (size_t i = 0; i < params.size(); ++i) {
      if (!local[i].defined()) continue;
      const at::Tensor want = local[i] * static_cast<double>(world);
      const at::Tensor got = params[i].grad().detach().to(at::kFloat);
      const double scale = want.abs().max().item<double>() + 1e-30;
      worst_rel = std::max(worst_rel, (got - want).abs().max().item<double>() / scale);
    }
    const double tol = dtype == at::kBFloat16 ? 1e-2 : 1e-5;
    if (!(worst_rel <= tol)) {
      std::fprintf(stderr,
                   "dist_allreduce: rank %lld: reduced gradient != %lld x local (worst relative "
                   "error %.3g > %.0g)\n",
                   static_cast<long long>(env->rank), static_cast<long long>(world), worst_rel,
                   tol);
      return 1;
    }
    progress("check passed; timing");
    for (int64_t i = 0; i < warmup + steps; ++i) {
      const bool timed = i >= warmup;
      const double a = pass(false);
      // The reduction alone, on the gradients this pass left.
      sync();
      const auto t0 = std::chrono::steady_clock::now();
      if (auto s = dd.AllReduceGradients(params); !s.ok()) throw std::runtime_error(s.ToString());
      sync();
      const double r = Seconds(t0);
      const double b = pass(true);
      if (timed) {
        t_alone.push_back(a);
        t_reduce.push_back(r);
        t_dist.push_back(b);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dist_allreduce: rank %lld: %s\n", static_cast<long long>(env->rank),
                 e.what());
    return 1;
  }
  // Every rank's medians; rank 0 reports the slowest rank's (the one the others wait for).
  std::vector<double> med = {egca::bench::Median(t_reduce), egca::bench::Median(t_dist),
                             egca::bench::Median(t_alone)};
  if (auto s = dd.MaxScalars(&med); !s.ok()) {
    std::fprintf(stderr, "dist_allreduce: %s\n", s.ToString().c_str());
    return 1;
  }
  if (writer) {
    const double algbw = static_cast<double>(reduce_bytes) / med[0] / 1e9;
    const double busbw = algbw * 2.0 * static_cast<double>(world - 1) / static_cast<double>(world);
    std::printf(
        "egca data-parallel gradient path: %lld rank(s), %s (%s), shape %s %s, %lld parameter "
        "tensors, %.1f MiB of gradients per all-reduce, buckets <= %lld MiB, batch %lld x %lld\n\n",
        static_cast<long long>(world), device_name.c_str(),
        co.backend == "auto" ? (cuda ? "nccl" : "gloo") : co.backend.c_str(), shape.c_str(),
        dtype_name.c_str(), static_cast<long long>(params.size()),
        static_cast<double>(reduce_bytes) / (1 << 20), static_cast<long long>(bucket_mb),
        static_cast<long long>(batch), static_cast<long long>(seq));
    std::printf("| what (median of %lld, slowest rank) | ms |\n|---|---|\n",
                static_cast<long long>(steps));
    std::printf("| all-reduce alone | %.2f (algbw %.1f GB/s, busbw %.1f GB/s) |\n", med[0] * 1e3,
                algbw, busbw);
    std::printf("| pass with the distribution (overlapped buckets) | %.2f |\n", med[1] * 1e3);
    std::printf("| pass alone | %.2f |\n", med[2] * 1e3);
    std::printf(
        "\noverhead of the distribution on a pass: %.3fx; reduced gradient = %lld x local within "
        "%.2g\n",
        med[1] / med[2], static_cast<long long>(world), worst_rel);
    if (!json_path.empty()) {
      nlohmann::json j = {
          {"world_size", world},   {"device", device_name},  {"backend", co.backend},
          {"shape", shape},        {"dtype", dtype_name},    {"gradient_bytes", reduce_bytes},
          {"allreduce_s", med[0]}, {"algbw_gbps", algbw},    {"busbw_gbps", busbw},
          {"pass_dist_s", med[1]}, {"pass_alone_s", med[2]}, {"worst_rel_error", worst_rel}};
      std::ofstream(json_path) << j.dump() << "\n";
    }
  }
  if (auto s = dist::FinishDistribution(dd); !s.ok()) {
    std::fprintf(stderr, "dist_allreduce: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
