// train_step: egca's GRPO training step (C++) against the same step in Python on the same
// device, in one run.
//
//   train_step [--device cpu|cuda] [--shape tiny|small|qwen2.5-0.5b] [--dtype float32|bfloat16]
//              [--batch B] [--seq T] [--prompt P] [--steps N] [--warmup W] [--threads N]
//              [--python PATH] [--impl auto|transformers|baseline] [--no-python]
//
// The step (both sides): log-probs of the completion tokens (positions P..T-1 of each row,
// only they go through lm_head), the GRPO clipped surrogate with fixed advantages, backward,
// AdamW. The C++ side is DecoderModel::ScoreCompletions + GrpoLoss + torch::optim::AdamW;
// the Python side (train_step_baseline.py, a child process run after the C++ side) is
// transformers' AutoModelForCausalLM with SDPA attention when transformers is importable,
// else bench/model's transformers-style decoder. Both load the checkpoint written here.
// Prints step time (median), tokens/s and peak memory (CUDA: the caching allocator's peak
// allocated bytes; CPU: peak resident set of the process), and the ratios.
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

#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/rl/grpo_loss.h"
#include "../common/stats.h"

using namespace egca::trainer;
namespace fs = std::filesystem;

namespace {

ModelConfig Shape(const std::string& name) {
  ModelConfig c;
  if (name == "qwen2.5-0.5b") {  // Qwen/Qwen2.5-0.5B's config.json
    c.family = ModelFamily::kQwen2;
    c.model_type = "qwen2";
    c.vocab_size = 151936;
    c.hidden_size = 896;
    c.intermediate_size = 4864;
    c.num_hidden_layers = 24;
    c.num_attention_heads = 14;
    c.num_key_value_heads = 2;
    c.head_dim = 64;
    c.rope_theta = 1000000.0;
    c.tie_word_embeddings = true;
    c.max_position_embeddings = 32768;
  } else {
    const bool small = name == "small";
    c.family = ModelFamily::kQwen3;
    c.model_type = "qwen3";
    c.vocab_size = small ? 32768 : 4096;
    c.hidden_size = small ? 256 : 64;
    c.intermediate_size = small ? 768 : 128;
    c.num_hidden_layers = small ? 4 : 2;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = c.hidden_size / 4;
    c.max_position_embeddings = 8192;
  }
  return c;
}

using egca::bench::Median;

std::string Gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024)); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"egca's GRPO training step against the same step in Python, same device"};
  std::string device_name = "cpu", shape = "tiny", dtype_name = "float32", python = EGCA_TORCH_PYTHON,
              impl = "auto";
  int64_t batch = 4, seq = 256, prompt = 64, steps = 5, warmup = 2, threads = 0;
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
  CLI11_PARSE(app, argc, argv);
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
  ModelConfig mc = Shape(shape);
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
  std::vector<std::vector<int32_t>> prompts(batch), completions(batch);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < seq; ++t) {
      const auto id = static_cast<int32_t>(((b * seq + t) * 13 + 7) % mc.vocab_size);
      (t < prompt ? prompts[b] : completions[b]).push_back(id);
    }
  }
  const int64_t width = seq - prompt;
  at::Tensor adv = at::empty({batch, width}, at::kFloat);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < width; ++t) {
      adv[b][t] = static_cast<float>(((b * 7 + t) % 11) - 5) / (10.0f * static_cast<float>(width));
    }
  }
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
        "--warmup {} --threads {} --impl {}",
        python, EGCA_TRAIN_STEP_SCRIPT, dir.string(), device_name, dtype_name, batch, seq, prompt, steps, warmup,
        threads, impl);
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
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
