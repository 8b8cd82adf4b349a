// train_step: egca's GRPO training step (C++) against the same step in Python on the same
// device, in one run.
//
//   train_step [--device cpu|cuda] [--shape tiny|small|qwen2.5-0.5b] [--dtype float32|bfloat16]
//              [--batch B] [--seq T] [--prompt P] [--steps N] [--warmup W] [--threads N]
//              [--python PATH] [--impl auto|transformers|baseline] [--no-python]
//              [--gen-prompts P --gen-samples G --gen-tokens N --gen-reps R]
//
// The step (both sides): log-probs of the completion tokens (positions P..T-1 of each row,
// only they go through lm_head), the GRPO clipped surrogate with fixed advantages, backward,
// AdamW. The C++ side is DecoderModel::ScoreCompletions + GrpoLoss + torch::optim::AdamW;
// the Python side (train_step_baseline.py, a child process run after the C++ side) is
// transformers' AutoModelForCausalLM with SDPA attention when transformers is importable,
// else bench/model's transformers-style decoder. Both load the checkpoint written here.
// Prints step time (median), tokens/s and peak memory (CUDA: the caching allocator's peak
// allocated bytes; CPU: peak resident set of the process), and the ratios.
// --gen-prompts P (> 0) adds sampling: P prompts of --prompt tokens x G samples x N new
// tokens at temperature 1 with no stop token (every row runs N tokens), C++ Generate (KV
// cache, one prefill per prompt) against transformers' generate (do_sample, min_new_tokens
// = N) on the same weights after the training steps; tokens/s = P x G x N / median of R runs.
//
// The GPU figures of the issue ("Qwen2.5-0.5B shape, bf16, batch 8 x 1,024"):
//   train_step --device cuda --shape qwen2.5-0.5b --dtype bfloat16 --batch 8 --seq 1024
//              --python /opt/torch/.venv/bin/python3
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/optim/adamw.h>
#include <torch/version.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#if EGCA_HAVE_CUDA_ALLOCATOR
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "egca/core/remove_tree.h"
#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/policy/sampler.h"
#include "egca/trainer/rl/grpo_loss.h"
#include "../common/crash_backtrace.h"
#include "../common/fixed_batch.h"
#include "../common/model_shapes.h"
#include "../common/stats.h"

using namespace egca::trainer;
namespace fs = std::filesystem;

namespace {

using egca::bench::Median;

std::string Gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024)); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"egca's GRPO training step against the same step in Python, same device"};
  std::string device_name = "cpu", shape = "tiny", dtype_name = "float32", python = EGCA_TORCH_PYTHON,
              impl = "auto";
  int64_t batch = 4, seq = 256, prompt = 64, steps = 5, warmup = 2, threads = 0;
  int64_t gen_prompts = 0, gen_samples = 8, gen_tokens = 256, gen_reps = 3;
  bool no_python = false;
  app.add_option("--device", device_name, "cpu, cuda or cuda:N");
  app.add_option("--shape", shape, "tiny, small or qwen2.5-0.5b")->check(CLI::IsMember({"tiny", "small", "qwen2.5-0.5b"}));
  app.add_option("--dtype", dtype_name, "float32 or bfloat16")->check(CLI::IsMember({"float32", "bfloat16"}));
  app.add_option("--batch", batch, "rows per step");
  app.add_option("--seq", seq, "tokens per row");
  app.add_option("--prompt", prompt, "prompt tokens per row (the rest is the completion)");
  app.add_option("--steps", steps, "timed steps per side");
  app.add_option("--warmup", warmup, "untimed steps per side");
  app.add_option("--threads", threads, "torch intra-op threads (0: default), both sides");
  app.add_option("--python", python, "Python with torch (and transformers, for the SDPA baseline)");
  app.add_option("--impl", impl, "Python side: auto, transformers or baseline");
  app.add_flag("--no-python", no_python, "C++ side only");
  app.add_option("--gen-prompts", gen_prompts, "sampling: prompts (0: no sampling section)");
  app.add_option("--gen-samples", gen_samples, "sampling: samples per prompt");
  app.add_option("--gen-tokens", gen_tokens, "sampling: new tokens per sample");
  app.add_option("--gen-reps", gen_reps, "sampling: timed runs per side (median)");
  CLI11_PARSE(app, argc, argv);
  egca::bench::InstallCrashBacktrace();
  setvbuf(stdout, nullptr, _IOLBF, 0);  // a table printed survives a later crash
  if (prompt < 1 || prompt >= seq) {
    std::fprintf(stderr, "train_step: --prompt must be in [1, --seq)\n");
    return 2;
  }
  const at::Device device(device_name);
  if (device.is_cuda() && !torch::cuda::is_available()) {
    std::fprintf(stderr, "train_step: --device %s but CUDA is not available\n", device_name.c_str());
    return 2;
  }
  if (threads > 0) at::set_num_threads(static_cast<int>(threads));
  const at::ScalarType dtype = dtype_name == "bfloat16" ? at::kBFloat16 : at::kFloat;

  const fs::path dir = fs::temp_directory_path() / fmt::format("egca_train_step_{}", getpid());
  ModelConfig mc = egca::bench::ModelShape(shape);
  mc.torch_dtype = dtype_name;
  if (auto s = CreateRandomCheckpoint(dir.string(), mc, 5); !s.ok()) {
    std::fprintf(stderr, "train_step: %s\n", s.ToString().c_str());
    return 1;
  }
  auto model = LoadCheckpoint(dir.string(), LoadOptions(device).set_dtype(dtype));
  if (!model.ok()) {
    std::fprintf(stderr, "train_step: %s\n", model.status().ToString().c_str());
    return 1;
  }
  DecoderModel& m = **model;
  m.train();
  torch::optim::AdamW opt(m.parameters(), torch::optim::AdamWOptions(1e-6));

  // The same ids and advantages as train_step_baseline.py.
  auto fixed = egca::bench::MakeFixedBatch(batch, seq, prompt, mc.vocab_size);
  const auto& prompts = fixed.prompts;
  const auto& completions = fixed.completions;
  const int64_t width = seq - prompt;
  at::Tensor adv = fixed.advantages;
  adv = adv.to(device);
  GrpoLossOptions lo;
  lo.beta = 0;
  auto sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize();
  };
  auto step = [&]() -> double {
    CompletionLogProbs out = m.ScoreCompletions(prompts, completions);  // [B, W]
    at::Tensor loss = GrpoLoss(out.log_probs, out.log_probs.detach(), {}, adv, out.mask, lo);
    loss.backward();
    opt.step();
    opt.zero_grad();
    return out.log_probs.detach().mean().item<double>();
  };
  double first = 0;
  for (int64_t i = 0; i < warmup; ++i) {
    const double v = step();
    if (i == 0) first = v;
  }
#if EGCA_HAVE_CUDA_ALLOCATOR
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index() < 0 ? 0 : device.index());
#endif
  std::vector<double> times;
  for (int64_t i = 0; i < steps; ++i) {
    sync();
    const auto t0 = std::chrono::steady_clock::now();
    step();
    sync();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  double peak = 0;
#if EGCA_HAVE_CUDA_ALLOCATOR
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    peak = static_cast<double>(stats.allocated_bytes[0].peak);
  }
#endif
  if (!device.is_cuda()) {
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    peak = static_cast<double>(ru.ru_maxrss) * 1024;
  }
  const double cpp_step = Median(times);
  std::fprintf(stderr, "[train_step] C++ step: %.1f ms (median of %lld)\n", cpp_step * 1e3, static_cast<long long>(steps));

  // Sampling: the same prompts on both sides (the first gen_prompts rows' prompt tokens).
  double cpp_gen_tps = 0;
  if (gen_prompts > 0) {
    m.eval();
    std::vector<std::vector<int32_t>> gp(gen_prompts);
    for (int64_t b = 0; b < gen_prompts; ++b) {
      for (int64_t t = 0; t < prompt; ++t) {
        gp[b].push_back(egca::bench::FixedTokenId(b, t, seq, mc.vocab_size));
      }
    }
    SamplingOptions so;
    so.set_num_samples_per_prompt(gen_samples).set_max_new_tokens(gen_tokens).set_temperature(1.0);
    std::vector<double> gt;
    for (int64_t r = 0; r <= gen_reps; ++r) {  // run 0 warms up
      so.set_seed(static_cast<uint64_t>(r + 1));
      sync();
      const auto t0 = std::chrono::steady_clock::now();
      auto out = Generate(m, gp, so);
      sync();
      if (!out.ok()) {
        std::fprintf(stderr, "train_step: Generate: %s\n", out.status().ToString().c_str());
        return 1;
      }
      int64_t n = 0;
      for (const auto& c : *out) n += static_cast<int64_t>(c.token_ids.size());
      if (r > 0) gt.push_back(static_cast<double>(n) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    cpp_gen_tps = Median(gt);
    std::fprintf(stderr, "[train_step] C++ sampling: %.0f tokens/s\n", cpp_gen_tps);
  }

  std::printf("GRPO training step, %s, shape %s, %s, batch %lld x %lld tokens (%lld completion), AdamW\n\n",
              device_name.c_str(), shape.c_str(), dtype_name.c_str(), static_cast<long long>(batch),
              static_cast<long long>(seq), static_cast<long long>(width));
  std::printf("| side | step ms (median of %lld) | tokens/s | peak memory | first-step mean log-prob |\n",
              static_cast<long long>(steps));
  std::printf("|---|---|---|---|---|\n");
  std::printf("| egca C++ (%s attention) | %.1f | %.0f | %s | %.6f |\n",
#if TORCH_VERSION_MAJOR >= 2
              "SDPA",
#else
              "explicit",
#endif
              cpp_step * 1e3, static_cast<double>(batch * seq) / cpp_step, Gib(peak).c_str(), first);
  if (!no_python) {
    const std::string cmd = fmt::format(
        "'{}' '{}' --checkpoint '{}' --device {} --dtype {} --batch {} --seq {} --prompt {} --steps {} "
        "--warmup {} --threads {} --impl {} --gen-prompts {} --gen-samples {} --gen-tokens {} --gen-reps {}",
        python, EGCA_TRAIN_STEP_SCRIPT, dir.string(), device_name, dtype_name, batch, seq, prompt, steps, warmup,
        threads, impl, gen_prompts, gen_samples, gen_tokens, gen_reps);
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
      pclose(p);
    }
    auto j = nlohmann::json::parse(out.substr(0, out.find('\n')), nullptr, false);
    if (j.is_discarded() || !j.contains("step_s")) {
      std::printf("| python | failed: %s |\n", out.c_str());
    } else {
      const double py = j["step_s"].get<double>();
      std::printf("| python %s (torch %s) | %.1f | %.0f | %s | %.6f |\n", j["impl"].get<std::string>().c_str(),
                  j["torch"].get<std::string>().c_str(), py * 1e3, j["tokens_per_s"].get<double>(),
                  Gib(j["peak_bytes"].get<double>()).c_str(), j["first_mean_logprob"].get<double>());
      std::printf("\nC++ step speed relative to Python: %.2fx (Python step / C++ step); peak memory C++/Python: "
                  "%.2f\n",
                  py / cpp_step, peak / j["peak_bytes"].get<double>());
      if (gen_prompts > 0) {
        const double py_tps = j.value("gen_tokens_per_s", 0.0);
        std::printf("\nSampling %lld prompts x %lld samples x %lld new tokens (temperature 1, no stop), tokens/s "
                    "(median of %lld):\n| side | tokens/s |\n|---|---|\n| egca C++ Generate | %.0f |\n",
                    static_cast<long long>(gen_prompts), static_cast<long long>(gen_samples),
                    static_cast<long long>(gen_tokens), static_cast<long long>(gen_reps), cpp_gen_tps);
        if (py_tps > 0) {
          std::printf("| python %s generate | %.0f |\n\nC++ sampling relative to Python: %.2fx\n",
                      j["impl"].get<std::string>().c_str(), py_tps, cpp_gen_tps / py_tps);
        } else {
          std::printf("| python | not measured (%s) |\n", j.value("gen_note", std::string("no generate")).c_str());
        }
      }
    }
  }
  if (no_python && gen_prompts > 0) {
    std::printf("\nSampling %lld prompts x %lld samples x %lld new tokens: egca C++ Generate %.0f tokens/s\n",
                static_cast<long long>(gen_prompts), static_cast<long long>(gen_samples),
                static_cast<long long>(gen_tokens), cpp_gen_tps);
  }
  std::error_code ec;
  egca::RemoveTree(dir, ec);
  return 0;
}
