// train_step: egca's GRPO training step (C++) against the same step in Python on the same
// device, in one run; or (--compare) egca's step before and after issue 39 in one run.
//
//   train_step [--device cpu|cuda] [--shape tiny|small|qwen2.5-0.5b] [--vocab V]
//              [--dtype float32|bfloat16] [--batch B] [--seq T] [--prompt P] [--steps N]
//              [--warmup W] [--threads N] [--python PATH] [--impl auto|transformers|baseline]
//              [--no-python] [--path before|after] [--compare --rounds R]
//              [--cuda-graph off|auto] [--profile PATH] [--entropy] [--logit-chunk-bytes N]
//              [--gen-prompts P --gen-samples G --gen-tokens N --gen-reps R]
//
// The step (both sides): log-probs of the completion tokens (positions P..T-1 of each row,
// only they go through lm_head), the GRPO clipped surrogate with fixed advantages, backward,
// AdamW. The C++ side is DecoderModel::ScoreCompletions + GrpoLoss + AdamW, in one of two
// versions (--path):
//   after   chunked log-probs (chunked_log_probs.h), MultiTensorAdamW (`_foreach_*` kernels),
//           sampling with the static KV cache (and CUDA graphs with --cuda-graph auto)
//   before  one [B, W, V] float32 log-softmax, torch::optim::AdamW's per-parameter loop,
//           sampling with the KV cache grown by at::cat: the code before issue 39
// --compare runs both versions, each in a child process of its own (peak memory is per
// process), alternating for --rounds rounds (the order flips each round), and prints both,
// the after/before ratio of each round and their median, and the load average; no Python.
// Each step is timed by the wall clock and by the process's CPU time (which other
// processes on a loaded machine inflate less). --entropy: the C++ step also computes the
// per-token entropy, as the trainer's first pass over a batch does (the Python side does
// not). --logit-chunk-bytes: the after version's tile of logits (default: the model's).
// The Python side (train_step_baseline.py, a child process run after the C++ side) is
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
// The CPU before/after figures of issue 39 (docs/PERFORMANCE.md):
//   train_step --compare --shape tiny --vocab 151936 --batch 4 --seq 256 --rounds 3
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/optim/adamw.h>
#include <torch/version.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
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
// --profile: LibTorch's legacy profiler (a Chrome trace of every op, host side), present in
// 1.13 and 2.x.
#if __has_include(<torch/csrc/autograd/profiler_legacy.h>)
#include <torch/csrc/autograd/profiler_legacy.h>
#define EGCA_HAVE_LEGACY_PROFILER 1
#else
#define EGCA_HAVE_LEGACY_PROFILER 0
#endif

#include "egca/core/remove_tree.h"
#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/policy/sampler.h"
#include "egca/trainer/rl/adamw.h"
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

struct Args {
  std::string device_name = "cpu", shape = "tiny", dtype_name = "float32",
              python = EGCA_TORCH_PYTHON, impl = "auto", path = "after", cuda_graph = "off",
              profile;
  int64_t vocab = 0, batch = 4, seq = 256, prompt = 64, steps = 5, warmup = 2, threads = 0;
  int64_t gen_prompts = 0, gen_samples = 8, gen_tokens = 256, gen_reps = 3, rounds = 3;
  int64_t logit_chunk_bytes = DecoderModel::kAutoLogitChunk;
  bool no_python = false, compare = false, entropy = false;
};

// What one version of the C++ side measured.
struct SideResult {
  double step_s = 0, peak_bytes = 0, first = 0, gen_tps = 0;
  double step_cpu_s = 0;  // CPU time of the process per step (median): what load cannot inflate
  std::string error;  // non-empty: the side failed
};

ModelConfig ShapeOf(const Args& a) {
  ModelConfig mc = egca::bench::ModelShape(a.shape);
  if (a.vocab > 0) mc.vocab_size = a.vocab;
  mc.torch_dtype = a.dtype_name;
  return mc;
}

// User + system CPU time of this process (all its threads), seconds.
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double PeakBytes(const at::Device& device) {
#if EGCA_HAVE_CUDA_ALLOCATOR
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    return static_cast<double>(stats.allocated_bytes[0].peak);
  }
#endif
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) * 1024;
}

// The C++ side: loads the checkpoint in `dir`, runs the timed steps and (gen_prompts > 0)
// the sampling, in the version `before` or after issue 39.
SideResult RunCpp(const Args& a, const fs::path& dir, bool before) {
  SideResult res;
  const at::Device device(a.device_name);
  if (device.is_cuda() && !torch::cuda::is_available()) {
    res.error = "--device " + a.device_name + " but CUDA is not available";
    return res;
  }
  if (a.threads > 0) at::set_num_threads(static_cast<int>(a.threads));
  const at::ScalarType dtype = a.dtype_name == "bfloat16" ? at::kBFloat16 : at::kFloat;
  const ModelConfig mc = ShapeOf(a);
  auto model = LoadCheckpoint(dir.string(), LoadOptions(device).set_dtype(dtype));
  if (!model.ok()) {
    res.error = model.status().ToString();
    return res;
  }
  DecoderModel& m = **model;
  m.train();
  m.set_logit_chunk_bytes(before ? 0 : a.logit_chunk_bytes);
  std::unique_ptr<torch::optim::AdamW> opt =
      before ? std::make_unique<torch::optim::AdamW>(m.parameters(), torch::optim::AdamWOptions(1e-6))
             : std::make_unique<MultiTensorAdamW>(m.parameters(), torch::optim::AdamWOptions(1e-6));

  // The same ids and advantages as train_step_baseline.py.
  auto fixed = egca::bench::MakeFixedBatch(a.batch, a.seq, a.prompt, mc.vocab_size);
  const auto& prompts = fixed.prompts;
  const auto& completions = fixed.completions;
  at::Tensor adv = fixed.advantages.to(device);
  GrpoLossOptions lo;
  lo.beta = 0;
  auto sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize();
  };
  auto step = [&]() -> double {
    CompletionLogProbs out = m.ScoreCompletions(prompts, completions, a.entropy);  // [B, W]
    if (a.entropy) (void)out.entropy.sum().item<double>();  // as the trainer logs it
    at::Tensor loss = GrpoLoss(out.log_probs, out.log_probs.detach(), {}, adv, out.mask, lo);
    loss.backward();
    opt->step();
    opt->zero_grad();
    return out.log_probs.detach().mean().item<double>();
  };
  for (int64_t i = 0; i < a.warmup; ++i) {
    const double v = step();
    if (i == 0) res.first = v;
  }
#if EGCA_HAVE_CUDA_ALLOCATOR
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index() < 0 ? 0 : device.index());
#endif
  std::vector<double> times, cpu_times;
  for (int64_t i = 0; i < a.steps; ++i) {
    sync();
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = ProcessCpuSeconds();
    const double v = step();
    if (a.warmup == 0 && i == 0) res.first = v;
    sync();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    cpu_times.push_back(ProcessCpuSeconds() - c0);
  }
  res.peak_bytes = PeakBytes(device);
  res.step_s = Median(times);
  res.step_cpu_s = Median(cpu_times);
  if (!a.profile.empty()) {
#if EGCA_HAVE_LEGACY_PROFILER
    {
      torch::autograd::profiler::RecordProfile guard(a.profile);
      for (int i = 0; i < 2; ++i) step();
      sync();
    }
    std::fprintf(stderr, "[train_step] profile of 2 steps: %s\n", a.profile.c_str());
#else
    std::fprintf(stderr, "[train_step] --profile: this LibTorch has no legacy profiler\n");
#endif
  }

  // Sampling: the same prompts on both sides (the first gen_prompts rows' prompt tokens).
  if (a.gen_prompts > 0) {
    m.eval();
    std::vector<std::vector<int32_t>> gp(a.gen_prompts);
    for (int64_t b = 0; b < a.gen_prompts; ++b) {
      for (int64_t t = 0; t < a.prompt; ++t) {
        gp[b].push_back(egca::bench::FixedTokenId(b, t, a.seq, mc.vocab_size));
      }
    }
    SamplingOptions so;
    so.set_num_samples_per_prompt(a.gen_samples).set_max_new_tokens(a.gen_tokens).set_temperature(1.0);
    so.set_static_cache(!before);
    so.set_cuda_graph(!before && a.cuda_graph == "auto" ? SamplingOptions::CudaGraph::kAuto
                                                         : SamplingOptions::CudaGraph::kOff);
    std::vector<double> gt;
    for (int64_t r = 0; r <= a.gen_reps; ++r) {  // run 0 warms up
      so.set_seed(static_cast<uint64_t>(r + 1));
      sync();
      const auto t0 = std::chrono::steady_clock::now();
      auto out = Generate(m, gp, so);
      sync();
      if (!out.ok()) {
        res.error = "Generate: " + out.status().ToString();
        return res;
      }
      int64_t n = 0;
      for (const auto& c : *out) n += static_cast<int64_t>(c.token_ids.size());
      if (r > 0) gt.push_back(static_cast<double>(n) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    res.gen_tps = Median(gt);
#if EGCA_HAVE_LEGACY_PROFILER
    if (!a.profile.empty()) {
      {
        torch::autograd::profiler::RecordProfile guard(a.profile + ".sampling.json");
        auto out = Generate(m, gp, so);
        sync();
      }
      std::fprintf(stderr, "[train_step] profile of one Generate: %s.sampling.json\n", a.profile.c_str());
    }
#endif
  }
  return res;
}

std::string ToJson(const SideResult& r) {
  nlohmann::json j;
  j["step_s"] = r.step_s;
  j["peak_bytes"] = r.peak_bytes;
  j["first"] = r.first;
  j["gen_tps"] = r.gen_tps;
  j["step_cpu_s"] = r.step_cpu_s;
  j["error"] = r.error;
  return j.dump();
}

// RunCpp in a child process (its own peak memory; CUDA initialized there, not here).
SideResult RunInChild(const Args& a, bool before) {
  int fds[2];
  SideResult failed;
  failed.error = "pipe failed";
  if (pipe(fds) != 0) return failed;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const fs::path dir = fs::temp_directory_path() / fmt::format("egca_train_step_{}", getpid());
    SideResult r;
    if (auto st = CreateRandomCheckpoint(dir.string(), ShapeOf(a), 5); !st.ok()) {
      r.error = st.ToString();
    } else {
      r = RunCpp(a, dir, before);
    }
    std::error_code ec;
    egca::RemoveTree(dir, ec);
    const std::string line = ToJson(r) + "\n";
    if (write(fds[1], line.data(), line.size()) < 0) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded()) {
    failed.error = fmt::format("child exited with status {}", status);
    return failed;
  }
  SideResult r;
  r.step_s = j["step_s"].get<double>();
  r.step_cpu_s = j["step_cpu_s"].get<double>();
  r.peak_bytes = j["peak_bytes"].get<double>();
  r.first = j["first"].get<double>();
  r.gen_tps = j["gen_tps"].get<double>();
  r.error = j["error"].get<std::string>();
  return r;
}

// The 1-minute load average, or -1 where the system does not say.
double LoadAverage() {
  double l[1] = {-1};
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

int Compare(const Args& a) {
  std::vector<double> step[2], cpu[2], peak[2], gen[2], wall_ratio, cpu_ratio;
  double first[2] = {0, 0};
  const double load_start = LoadAverage();
  for (int64_t round = 0; round < a.rounds; ++round) {
    // Alternating, and the order flips each round: neither version always runs first.
    for (int k = 0; k < 2; ++k) {
      const int v = round % 2 == 0 ? k : 1 - k;  // 0 = before, 1 = after
      const SideResult r = RunInChild(a, v == 0);
      if (!r.error.empty()) {
        std::fprintf(stderr, "train_step: %s: %s\n", v == 0 ? "before" : "after", r.error.c_str());
        return 1;
      }
      step[v].push_back(r.step_s);
      cpu[v].push_back(r.step_cpu_s);
      peak[v].push_back(r.peak_bytes);
      gen[v].push_back(r.gen_tps);
      first[v] = r.first;
      std::fprintf(stderr, "[train_step] round %lld %s: step %.1f ms (CPU %.1f ms), peak %s, load %.1f\n",
                   static_cast<long long>(round + 1), v == 0 ? "before" : "after", r.step_s * 1e3,
                   r.step_cpu_s * 1e3, Gib(r.peak_bytes).c_str(), LoadAverage());
    }
    wall_ratio.push_back(step[1].back() / step[0].back());
    cpu_ratio.push_back(cpu[1].back() / cpu[0].back());
  }
  const double load_end = LoadAverage();
  const ModelConfig mc = ShapeOf(a);
  std::printf("GRPO training step before/after issue 39, %s, shape %s (vocab %lld), %s, batch %lld x %lld tokens "
              "(%lld completion), %lld rounds (each version in its own process, alternating, order flipped each "
              "round), load average %.1f -> %.1f\n\n",
              a.device_name.c_str(), a.shape.c_str(), static_cast<long long>(mc.vocab_size), a.dtype_name.c_str(),
              static_cast<long long>(a.batch), static_cast<long long>(a.seq), static_cast<long long>(a.seq - a.prompt),
              static_cast<long long>(a.rounds), load_start, load_end);
  std::printf("| version | step ms (median over rounds of the median of %lld) | step ms per round | step CPU ms per "
              "round | peak memory (max over rounds) | first-step mean log-prob |%s\n",
              static_cast<long long>(a.steps), a.gen_prompts > 0 ? " sampling tokens/s |" : "");
  std::printf("|---|---|---|---|---|---|%s\n", a.gen_prompts > 0 ? "---|" : "");
  const char* names[2] = {"before (full log-softmax, AdamW loop, growing KV cache)",
                          "after (chunked log-probs, multi-tensor AdamW, static KV cache)"};
  auto per_round = [](const std::vector<double>& v, double scale) {
    std::string s;
    for (double t : v) s += fmt::format("{}{:.{}f}", s.empty() ? "" : " / ", t * scale, scale == 1 ? 3 : 1);
    return s;
  };
  for (int v = 0; v < 2; ++v) {
    std::printf("| %s | %.1f | %s | %s | %s | %.6f |", names[v], Median(step[v]) * 1e3, per_round(step[v], 1e3).c_str(),
                per_round(cpu[v], 1e3).c_str(), Gib(*std::max_element(peak[v].begin(), peak[v].end())).c_str(),
                first[v]);
    if (a.gen_prompts > 0) std::printf(" %.0f |", Median(gen[v]));
    std::printf("\n");
  }
  std::printf("\nafter / before per round: step time %s (median %.3f; below 1: faster), step CPU time %s (median "
              "%.3f); peak memory %.3f",
              per_round(wall_ratio, 1).c_str(), Median(wall_ratio), per_round(cpu_ratio, 1).c_str(),
              Median(cpu_ratio),
              *std::max_element(peak[1].begin(), peak[1].end()) / *std::max_element(peak[0].begin(), peak[0].end()));
  if (a.gen_prompts > 0) std::printf(", sampling tokens/s %.3f", Median(gen[1]) / Median(gen[0]));
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"egca's GRPO training step against the same step in Python, same device"};
  Args a;
  app.add_option("--device", a.device_name, "cpu, cuda or cuda:N");
  app.add_option("--shape", a.shape, "tiny, small or qwen2.5-0.5b")->check(CLI::IsMember({"tiny", "small", "qwen2.5-0.5b"}));
  app.add_option("--vocab", a.vocab, "vocabulary size in place of the shape's (e.g. 151936 with tiny)");
  app.add_option("--dtype", a.dtype_name, "float32 or bfloat16")->check(CLI::IsMember({"float32", "bfloat16"}));
  app.add_option("--batch", a.batch, "rows per step");
  app.add_option("--seq", a.seq, "tokens per row");
  app.add_option("--prompt", a.prompt, "prompt tokens per row (the rest is the completion)");
  app.add_option("--steps", a.steps, "timed steps per side");
  app.add_option("--warmup", a.warmup, "untimed steps per side");
  app.add_option("--threads", a.threads, "torch intra-op threads (0: default), both sides");
  app.add_option("--python", a.python, "Python with torch (and transformers, for the SDPA baseline)");
  app.add_option("--impl", a.impl, "Python side: auto, transformers or baseline");
  app.add_flag("--no-python", a.no_python, "C++ side only");
  app.add_option("--path", a.path, "the C++ version: after (issue 39) or before")->check(CLI::IsMember({"before", "after"}));
  app.add_flag("--compare", a.compare, "C++ before against after, each in its own process; no Python");
  app.add_option("--rounds", a.rounds, "--compare: rounds (each runs both versions)");
  app.add_option("--logit-chunk-bytes", a.logit_chunk_bytes,
                 "after: bytes of float32 logits per tile of the chunked log-probs (-1: the default)");
  app.add_flag("--entropy", a.entropy, "the step also computes the per-token entropy (the trainer's first pass does)");
  app.add_option("--cuda-graph", a.cuda_graph, "sampling, after: off or auto (CUDA graphs)")->check(CLI::IsMember({"off", "auto"}));
  app.add_option("--profile", a.profile, "write a Chrome trace of 2 C++ steps here (and of one Generate to PATH.sampling.json)");
  app.add_option("--gen-prompts", a.gen_prompts, "sampling: prompts (0: no sampling section)");
  app.add_option("--gen-samples", a.gen_samples, "sampling: samples per prompt");
  app.add_option("--gen-tokens", a.gen_tokens, "sampling: new tokens per sample");
  app.add_option("--gen-reps", a.gen_reps, "sampling: timed runs per side (median)");
  CLI11_PARSE(app, argc, argv);
  egca::bench::InstallCrashBacktrace();
  setvbuf(stdout, nullptr, _IOLBF, 0);  // a table printed survives a later crash
  if (a.prompt < 1 || a.prompt >= a.seq) {
    std::fprintf(stderr, "train_step: --prompt must be in [1, --seq)\n");
    return 2;
  }
  if (a.compare) return Compare(a);

  const fs::path dir = fs::temp_directory_path() / fmt::format("egca_train_step_{}", getpid());
  if (auto st = CreateRandomCheckpoint(dir.string(), ShapeOf(a), 5); !st.ok()) {
    std::fprintf(stderr, "train_step: %s\n", st.ToString().c_str());
    return 1;
  }
  const SideResult cpp = RunCpp(a, dir, a.path == "before");
  if (!cpp.error.empty()) {
    std::fprintf(stderr, "train_step: %s\n", cpp.error.c_str());
    return 1;
  }
  const double cpp_step = cpp.step_s, peak = cpp.peak_bytes, first = cpp.first, cpp_gen_tps = cpp.gen_tps;
  const int64_t batch = a.batch, seq = a.seq, width = a.seq - a.prompt, steps = a.steps;
  const int64_t gen_prompts = a.gen_prompts, gen_samples = a.gen_samples, gen_tokens = a.gen_tokens,
                gen_reps = a.gen_reps;
  std::fprintf(stderr, "[train_step] C++ step: %.1f ms, CPU %.1f ms (medians of %lld)\n", cpp_step * 1e3,
               cpp.step_cpu_s * 1e3, static_cast<long long>(steps));
  if (gen_prompts > 0) std::fprintf(stderr, "[train_step] C++ sampling: %.0f tokens/s\n", cpp_gen_tps);

  std::printf("GRPO training step, %s, shape %s, %s, batch %lld x %lld tokens (%lld completion), AdamW, C++ %s\n\n",
              a.device_name.c_str(), a.shape.c_str(), a.dtype_name.c_str(), static_cast<long long>(batch),
              static_cast<long long>(seq), static_cast<long long>(width), a.path.c_str());
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
  if (!a.no_python) {
    const std::string cmd = fmt::format(
        "'{}' '{}' --checkpoint '{}' --device {} --dtype {} --batch {} --seq {} --prompt {} --steps {} "
        "--warmup {} --threads {} --impl {} --gen-prompts {} --gen-samples {} --gen-tokens {} --gen-reps {}",
        a.python, EGCA_TRAIN_STEP_SCRIPT, dir.string(), a.device_name, a.dtype_name, batch, seq, a.prompt, steps,
        a.warmup, a.threads, a.impl, gen_prompts, gen_samples, gen_tokens, gen_reps);
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
  if (a.no_python && gen_prompts > 0) {
    std::printf("\nSampling %lld prompts x %lld samples x %lld new tokens: egca C++ Generate %.0f tokens/s\n",
                static_cast<long long>(gen_prompts), static_cast<long long>(gen_samples),
                static_cast<long long>(gen_tokens), cpp_gen_tps);
  }
  std::error_code ec;
  egca::RemoveTree(dir, ec);
  return 0;
}
