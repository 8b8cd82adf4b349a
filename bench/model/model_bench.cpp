// model_bench: decoder speed against the same model in Python torch, same run.
//
//   generation tokens/s with and without the KV cache (greedy, batch of prompts)
//   one forward+backward step (teacher-forced mean token log-prob) for a fixed small config
//
// Writes a random checkpoint, runs the C++ side, then bench/model/model_step_baseline.py on
// the same checkpoint as a subprocess (Debian's python3-torch: the same LibTorch underneath),
// and prints both with the ratio. The losses must agree, which also checks that Python reads
// what the C++ safetensors writer wrote.
//
//   model_bench [--threads N] [--steps N] [--small] [--no-python]
// --small: half the sequence lengths (for a machine with a slow reference BLAS).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "egca/trainer/checkpoint.h"
#include "egca/trainer/sampler.h"

namespace {

using egca::trainer::DecoderModel;
using Clock = std::chrono::steady_clock;

struct Args {
  int threads = 1;
  int steps = 10;
  bool python = true;
  bool small = false;
  int64_t batch = 4, seq = 128;
  int64_t gen_batch = 8, prompt = 32, new_tokens = 64;
};

egca::trainer::ModelConfig BenchConfig() {
  egca::trainer::ModelConfig c;
  c.family = egca::trainer::ModelFamily::kQwen3;
  c.model_type = "qwen3";
  c.vocab_size = 8192;
  c.hidden_size = 256;
  c.intermediate_size = 768;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 2;
  c.head_dim = 32;
  c.rope_theta = 1000000.0;
  c.tie_word_embeddings = false;
  c.max_position_embeddings = 1024;
  return c;
}

at::Tensor FixedIds(int64_t batch, int64_t seq, int64_t vocab) {
  return (at::arange(batch * seq, at::kLong) * 13 + 7).remainder(vocab).view({batch, seq});
}

// Process CPU seconds: with one intra-op thread this is the work done, independent of how
// many other jobs share the machine (wall time is printed too).
double CpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string RunCapture(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      args.threads = std::atoi(argv[++i]);
    } else if (a == "--steps" && i + 1 < argc) {
      args.steps = std::atoi(argv[++i]);
    } else if (a == "--small") {
      args.small = true;
    } else if (a == "--no-python") {
      args.python = false;
    } else {
      std::fprintf(stderr,
                   "usage: model_bench [--threads N] [--steps N] [--small] [--no-python]\n");
      return 2;
    }
  }
  if (args.small) {
    args.seq = 64;
    args.new_tokens = 32;
    args.prompt = 16;
  }
  at::set_num_threads(args.threads);
  const auto config = BenchConfig();
  const std::string dir = std::string(EGCA_BINARY_DIR) + "/bench_model_checkpoint";
  if (auto s = egca::trainer::CreateRandomCheckpoint(dir, config, 1234); !s.ok()) {
    std::fprintf(stderr, "model_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  auto loaded = egca::trainer::LoadCheckpoint(dir, egca::trainer::LoadOptions(at::kCPU));
  if (!loaded.ok()) {
    std::fprintf(stderr, "model_bench: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  DecoderModel& model = **loaded;

  // Forward + backward.
  at::Tensor ids = FixedIds(args.batch, args.seq, config.vocab_size);
  auto step = [&] {
    at::Tensor lp = model.TokenLogProbs(ids).slice(1, 1);
    at::Tensor loss = -lp.mean();
    loss.backward();
    for (auto& p : model.parameters()) p.mutable_grad() = at::Tensor();
    return loss.item<double>();
  };
  const double loss = step();
  step();
  std::vector<double> wall, cpu;
  for (int i = 0; i < args.steps; ++i) {
    auto t0 = Clock::now();
    const double c0 = CpuSeconds();
    step();
    cpu.push_back(CpuSeconds() - c0);
    wall.push_back(Seconds(t0, Clock::now()));
  }
  const double step_ms = 1000 * Median(cpu);
  const double step_wall_ms = 1000 * Median(wall);

  // Generation.
  at::Tensor prompt_ids = FixedIds(args.gen_batch, args.prompt, config.vocab_size);
  std::vector<std::vector<int32_t>> prompts(args.gen_batch);
  for (int64_t b = 0; b < args.gen_batch; ++b) {
    for (int64_t t = 0; t < args.prompt; ++t) {
      prompts[b].push_back(static_cast<int32_t>(prompt_ids[b][t].item<int64_t>()));
    }
  }
  double gen_tps[2], gen_wall_tps[2];
  for (int use_cache = 1; use_cache >= 0; --use_cache) {
    egca::trainer::SamplingOptions o;
    o.set_temperature(0).set_max_new_tokens(args.new_tokens).set_use_kv_cache(use_cache == 1);
    (void)egca::trainer::Generate(model, prompts, o);  // warm-up
    auto t0 = Clock::now();
    const double c0 = CpuSeconds();
    auto out = egca::trainer::Generate(model, prompts, o);
    const double dt = CpuSeconds() - c0;
    const double wall_dt = Seconds(t0, Clock::now());
    int64_t tokens = 0;
    for (const auto& c : *out) tokens += static_cast<int64_t>(c.token_ids.size());
    gen_tps[use_cache] = tokens / dt;
    gen_wall_tps[use_cache] = tokens / wall_dt;
  }

  nlohmann::json py;
  if (args.python) {
    const std::string cmd = fmt::format(
        "{} {} --checkpoint {} --threads {} --steps {} --batch {} --seq {} --gen-batch {} "
        "--prompt {} --new-tokens {}",
        EGCA_TORCH_PYTHON, EGCA_MODEL_BENCH_SCRIPT, dir, args.threads, args.steps, args.batch,
        args.seq, args.gen_batch, args.prompt, args.new_tokens);
    py = nlohmann::json::parse(RunCapture(cmd), nullptr, false);
    if (py.is_discarded() || !py.is_object()) {
      std::fprintf(stderr, "model_bench: python baseline failed: %s\n", cmd.c_str());
      py = nlohmann::json();
    }
  }

  std::printf(
      "model_bench: qwen3-style hidden %lld, %lld layers, %lld/%lld heads, vocab %lld, "
      "%d thread(s), LibTorch %s\n",
      static_cast<long long>(config.hidden_size), static_cast<long long>(config.num_hidden_layers),
      static_cast<long long>(config.num_attention_heads),
      static_cast<long long>(config.num_key_value_heads), static_cast<long long>(config.vocab_size),
      args.threads, TORCH_VERSION);
  std::printf("%-44s %12s %12s %10s\n", "measure", "C++", "Python", "Py/C++");
  auto row = [&](const std::string& name, double cpp, const char* key, const char* sub,
                 bool higher_is_better) {
    double p = 0;
    if (!py.is_null()) p = sub ? py[key][sub].get<double>() : py[key].get<double>();
    std::string ratio = "-";
    if (p > 0) ratio = fmt::format("{:.2f}", higher_is_better ? cpp / p : p / cpp);
    std::printf("%-44s %12.2f %12s %10s\n", name.c_str(), cpp,
                p > 0 ? fmt::format("{:.2f}", p).c_str() : "-", ratio.c_str());
  };
  row(fmt::format("fwd+bwd step CPU ms (batch {} x {} tokens)", args.batch, args.seq), step_ms,
      "step_cpu_ms_median", nullptr, false);
  row(fmt::format("generate tok/CPU-s, KV cache ({} x {} new)", args.gen_batch, args.new_tokens),
      gen_tps[1], "gen_tokens_per_cpu_s", "with_cache", true);
  row(fmt::format("generate tok/CPU-s, no cache ({} x {} new)", args.gen_batch, args.new_tokens),
      gen_tps[0], "gen_tokens_per_cpu_s", "without_cache", true);
  row("fwd+bwd step wall ms", step_wall_ms, "step_wall_ms_median", nullptr, false);
  row("generate tok/s wall, KV cache", gen_wall_tps[1], "gen_tokens_per_wall_s", "with_cache",
      true);
  row("generate tok/s wall, no cache", gen_wall_tps[0], "gen_tokens_per_wall_s", "without_cache",
      true);
  std::printf("KV cache speed-up (C++, CPU time): %.2fx\n", gen_tps[1] / gen_tps[0]);
  std::printf("Py/C++ > 1 means C++ is faster (for tok/s the column is C++/Py).\n");
  std::printf("loss C++ %.6f", loss);
  if (!py.is_null()) {
    const double py_loss = py["loss"].get<double>();
    std::printf("  Python %.6f  |diff| %.2e%s", py_loss, std::abs(py_loss - loss),
                std::abs(py_loss - loss) < 1e-4 ? "" : "  MISMATCH");
  }
  std::printf("\n");
  std::filesystem::remove_all(dir);
  return 0;
}
