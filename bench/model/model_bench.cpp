// model_bench: decoder speed against the same model in Python torch, same run.
//
//   one forward+backward step (teacher-forced mean token log-prob) for a fixed small config
//   generation tokens/s with and without the KV cache (greedy, batch of prompts)
//
// Writes a random checkpoint, loads it, and starts bench/model/model_step_baseline.py on the
// same checkpoint as a child process (Debian's python3-torch: the same LibTorch underneath)
// that waits for commands on a pipe. The two sides then take turns: `--rounds` rounds of
// (C++ steps, Python steps), so a load change on the shared machine hits both alike, and
// the child sleeps in read() while the C++ side runs. The losses must agree, which also
// checks that Python reads what the C++ safetensors writer wrote.
//
// Fairness of the allocator: a step allocates and frees ~100 MB of activations (the
// [B, T, V] logits and their gradients are 16 MB each). glibc's malloc adapts its
// mmap/trim thresholds to what the process freed *before* (checkpoint writing, file
// reading), and with the default thresholds freed blocks go back to the kernel and are
// page-faulted in again on the next step: 4k-19k minor faults per step, 10-45 ms of system
// time, in an amount that depends on each process's history rather than on the model code.
// By default both sides therefore run with the same fixed thresholds (mallopt here,
// GLIBC_TUNABLES for the child; `--malloc default` turns this off), and the table shows
// user and system time and page faults separately.
//
//   model_bench [--threads N] [--steps N] [--rounds N] [--gen-reps N] [--batch N] [--seq N]
//               [--small] [--no-python] [--malloc pinned|default] [--profile DIR]
// --steps: timed steps per side (default 20); --rounds: turns they are split into (default:
//   one step per turn, strict alternation). --batch/--seq: the training step's shape
//   (default 4 x 128; e.g. 1 x 8 makes per-op dispatch dominate). --gen-reps: timed
//   generation runs per side and mode, alternating (default 3; the median is shown).
// --small: half the sequence lengths (for a machine with a slow reference BLAS).
// --profile DIR: also record one step on each side with the autograd profiler (legacy
//   event profiler on both sides), write DIR/{cpp,python}_step.json (chrome traces) and
//   print the per-op comparison (calls and self CPU time).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/version.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/policy/sampler.h"
#include "../common/stats.h"

namespace {

using egca::trainer::DecoderModel;
using nlohmann::json;

// Fixed malloc thresholds for both sides (see the file comment). 32 MiB is glibc's upper
// bound for the mmap threshold on 64-bit hosts; blocks below it come from the heap, and the
// heap is only trimmed when 512 MiB at its top are free.
constexpr int kMmapThreshold = 32 << 20;
constexpr int kTrimThreshold = 512 << 20;
constexpr int kProfiledSteps = 5;

struct Args {
  int threads = 1;
  int steps = 20;
  int rounds = 0;  // 0: as many turns as steps (strict alternation)
  int gen_reps = 3;
  bool python = true;
  bool small = false;
  bool pin_malloc = true;
  std::string profile_dir;
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

// OpenBLAS has its own thread pool that at::set_num_threads does not govern; left alone its
// spinning threads inflate CPU time by up to 2x. Returns false when OpenBLAS is not the BLAS
// in use (Debian's libblas.so.3 alternative may be the slow reference BLAS).
bool SetOpenBlasThreads(int n) {
  using SetThreads = void (*)(int);
  auto fn = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (fn == nullptr) return false;
  fn(n);
  return true;
}

// Resources used by one measured piece of work. Process CPU time: with one intra-op thread
// and OpenBLAS pinned to one thread this is the work done, whatever else shares the machine
// (wall time is kept too). The Python side measures the same quantities the same way
// (time.process_time = CLOCK_PROCESS_CPUTIME_ID, resource.getrusage).
struct Usage {
  double cpu_ms = 0, wall_ms = 0, user_ms = 0, sys_ms = 0, minflt = 0;
};

class Meter {
 public:
  Meter() { Read(&cpu_, &wall_, &ru_); }
  Usage Stop() const {
    double cpu, wall;
    rusage ru{};
    Read(&cpu, &wall, &ru);
    Usage u;
    u.cpu_ms = 1000 * (cpu - cpu_);
    u.wall_ms = 1000 * (wall - wall_);
    u.user_ms = 1000 * (Sec(ru.ru_utime) - Sec(ru_.ru_utime));
    u.sys_ms = 1000 * (Sec(ru.ru_stime) - Sec(ru_.ru_stime));
    u.minflt = static_cast<double>(ru.ru_minflt - ru_.ru_minflt);
    return u;
  }

 private:
  static double Sec(const timeval& t) { return t.tv_sec + 1e-6 * t.tv_usec; }
  static double Sec(const timespec& t) { return t.tv_sec + 1e-9 * t.tv_nsec; }
  static void Read(double* cpu, double* wall, rusage* ru) {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    *cpu = Sec(ts);
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    *wall = Sec(ts);
    ::getrusage(RUSAGE_SELF, ru);
  }
  double cpu_, wall_;
  rusage ru_{};
};

Usage UsageFromJson(const json& j) {
  Usage u;
  u.cpu_ms = j.at("cpu_ms").get<double>();
  u.wall_ms = j.at("wall_ms").get<double>();
  u.user_ms = j.at("user_ms").get<double>();
  u.sys_ms = j.at("sys_ms").get<double>();
  u.minflt = j.at("minflt").get<double>();
  return u;
}

using egca::bench::Median;

// Median of one field over samples.
double MedianOf(const std::vector<Usage>& samples, double Usage::*field) {
  std::vector<double> v;
  for (const auto& s : samples) v.push_back(s.*field);
  return Median(v);
}

// The Python baseline as a child process speaking one JSON line per command line.
// Owns the child and both pipe ends; the destructor closes its stdin (the child exits on
// EOF) and reaps it.
class PythonBaseline {
 public:
  // `env` is added to the child's environment.
  static std::unique_ptr<PythonBaseline> Start(
      const std::vector<std::string>& argv,
      const std::vector<std::pair<std::string, std::string>>& env) {
    int to_child[2], from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0) return nullptr;
    if (::pipe2(from_child, O_CLOEXEC) != 0) {
      ::close(to_child[0]);
      ::close(to_child[1]);
      return nullptr;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(to_child[0], 0);
      ::dup2(from_child[1], 1);
      for (const auto& [key, value] : env) ::setenv(key.c_str(), value.c_str(), 1);
      std::vector<char*> cargv;
      for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
      cargv.push_back(nullptr);
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    if (pid < 0) {
      ::close(to_child[1]);
      ::close(from_child[0]);
      return nullptr;
    }
    auto p = std::unique_ptr<PythonBaseline>(new PythonBaseline());
    p->pid_ = pid;
    p->in_ = ::fdopen(to_child[1], "w");
    p->out_ = ::fdopen(from_child[0], "r");
    return p;
  }

  ~PythonBaseline() {
    if (in_ != nullptr) std::fclose(in_);
    if (out_ != nullptr) std::fclose(out_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }

  // Sends one command and returns the reply; a discarded json value if the child died or
  // replied with something that is not a JSON object.
  json Call(const std::string& command) {
    std::fprintf(in_, "%s\n", command.c_str());
    std::fflush(in_);
    std::string line;
    int c;
    while ((c = std::fgetc(out_)) != EOF && c != '\n') line.push_back(static_cast<char>(c));
    json reply = json::parse(line, nullptr, false);
    if (!reply.is_object()) return json(json::value_t::discarded);
    return reply;
  }

 private:
  PythonBaseline() = default;
  pid_t pid_ = -1;
  FILE* in_ = nullptr;
  FILE* out_ = nullptr;
};

// Per-op totals from a chrome trace written by the legacy autograd profiler (either side):
// calls and self time (an event's duration minus that of the events nested directly in it
// on the same thread). As Python's profiler does when it exports (EventList's duplicate
// removal), an event that is the only child of an event with the same name is folded into
// its parent: `mul(Tensor, Scalar)` re-dispatching to `mul(Tensor, Tensor)` is one op, and
// the C++ trace would otherwise count it twice.
struct OpStat {
  int64_t calls = 0;
  double self_us = 0;
};

std::map<std::string, OpStat> OpStats(const std::string& path) {
  std::ifstream in(path);
  json trace = json::parse(in, nullptr, false);
  if (trace.is_object() && trace.contains("traceEvents")) trace = trace["traceEvents"];
  struct Node {
    std::string name;
    double begin = 0, end = 0;
    int parent = -1;
    std::vector<int> children;
    bool folded = false;
  };
  std::map<std::string, std::vector<Node>> by_thread;
  if (trace.is_array()) {
    for (const auto& e : trace) {
      if (e.value("ph", "") != "X") continue;
      Node n;
      n.name = e.at("name").get<std::string>();
      n.begin = e.at("ts").get<double>();
      n.end = n.begin + e.at("dur").get<double>();
      by_thread[e.at("tid").dump()].push_back(std::move(n));
    }
  }
  std::map<std::string, OpStat> stats;
  for (auto& [tid, nodes] : by_thread) {
    // Parents first: earlier begin, and for equal begins the longer event.
    std::sort(nodes.begin(), nodes.end(), [](const Node& a, const Node& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
    });
    std::vector<int> stack;
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
      while (!stack.empty() && nodes[stack.back()].end <= nodes[i].begin) stack.pop_back();
      if (!stack.empty()) {
        nodes[i].parent = stack.back();
        nodes[stack.back()].children.push_back(i);
      }
      stack.push_back(i);
    }
    // In pre-order, so a chain a > a > a folds into its top.
    for (Node& n : nodes) {
      if (n.parent < 0) continue;
      Node& p = nodes[n.parent];
      if (p.name != n.name || p.children.size() != 1) continue;
      p.children = n.children;
      for (int c : n.children) nodes[c].parent = n.parent;
      n.folded = true;
    }
    for (const Node& n : nodes) {
      if (n.folded) continue;
      double child_us = 0;
      for (int c : n.children) child_us += nodes[c].end - nodes[c].begin;
      OpStat& s = stats[n.name];
      s.calls += 1;
      s.self_us += (n.end - n.begin) - child_us;
    }
  }
  return stats;
}

// Per op: calls and self time of each recorded step; the table shows the median over steps,
// so a preemption that lands inside one op in one step (the profiler measures wall time)
// does not make that op look slow.
void PrintProfileComparison(const std::vector<std::string>& cpp_paths,
                            const std::vector<std::string>& py_paths) {
  struct Row {
    std::vector<double> calls[2], self_us[2];
  };
  std::map<std::string, Row> rows;
  const std::vector<std::string>* sides[2] = {&cpp_paths, &py_paths};
  for (int side = 0; side < 2; ++side) {
    for (size_t i = 0; i < sides[side]->size(); ++i) {
      for (const auto& [name, s] : OpStats((*sides[side])[i])) {
        Row& row = rows[name];
        row.calls[side].resize(sides[side]->size(), 0);  // ops absent from a step count 0
        row.self_us[side].resize(sides[side]->size(), 0);
        row.calls[side][i] = static_cast<double>(s.calls);
        row.self_us[side][i] = s.self_us;
      }
    }
  }
  struct Shown {
    std::string name;
    double calls[2], ms[2];
  };
  std::vector<Shown> shown;
  Shown total{"all ops", {0, 0}, {0, 0}};
  for (const auto& [name, row] : rows) {
    Shown s{name, {}, {}};
    for (int side = 0; side < 2; ++side) {
      s.calls[side] = Median(row.calls[side]);
      s.ms[side] = Median(row.self_us[side]) / 1000;
      total.calls[side] += s.calls[side];
      total.ms[side] += s.ms[side];
    }
    shown.push_back(s);
  }
  std::sort(shown.begin(), shown.end(), [](const Shown& a, const Shown& b) {
    return std::max(a.ms[0], a.ms[1]) > std::max(b.ms[0], b.ms[1]);
  });
  std::printf("\nautograd profiler: per op, median over %zu C++ and %zu Python steps (traces in %s)\n",
              cpp_paths.size(), py_paths.size(),
              std::filesystem::path(cpp_paths.front()).parent_path().c_str());
  std::printf("%-58s %7s %7s %9s %9s\n", "op (self CPU; profiler overhead included)", "C++ n",
              "Py n", "C++ ms", "Py ms");
  shown.push_back(total);
  for (const Shown& s : shown) {
    // Ops with the same count on both sides and under 0.3 ms are left out of the list.
    if (&s != &shown.back() && s.calls[0] == s.calls[1] && std::max(s.ms[0], s.ms[1]) < 0.3) {
      continue;
    }
    std::string name = s.name.size() > 58 ? s.name.substr(0, 55) + "..." : s.name;
    std::printf("%-58s %7.0f %7.0f %9.2f %9.2f\n", name.c_str(), s.calls[0], s.calls[1], s.ms[0],
                s.ms[1]);
  }
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
    } else if (a == "--rounds" && i + 1 < argc) {
      args.rounds = std::atoi(argv[++i]);
    } else if (a == "--gen-reps" && i + 1 < argc) {
      args.gen_reps = std::atoi(argv[++i]);
    } else if (a == "--batch" && i + 1 < argc) {
      args.batch = std::atoi(argv[++i]);
    } else if (a == "--seq" && i + 1 < argc) {
      args.seq = std::atoi(argv[++i]);
    } else if (a == "--small") {
      args.small = true;
    } else if (a == "--no-python") {
      args.python = false;
    } else if (a == "--malloc" && i + 1 < argc) {
      const std::string v = argv[++i];
      if (v != "pinned" && v != "default") {
        std::fprintf(stderr, "model_bench: --malloc must be pinned or default, got '%s'\n",
                     v.c_str());
        return 2;
      }
      args.pin_malloc = v == "pinned";
    } else if (a == "--profile" && i + 1 < argc) {
      args.profile_dir = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: model_bench [--threads N] [--steps N] [--rounds N] [--gen-reps N] "
                   "[--batch N] [--seq N] [--small] [--no-python] [--malloc pinned|default] "
                   "[--profile DIR]\n");
      return 2;
    }
  }
  if (args.threads < 1 || args.steps < 1 || args.gen_reps < 1 || args.rounds < 0 ||
      args.batch < 1 || args.seq < 2) {
    std::fprintf(stderr,
                 "model_bench: --threads, --steps, --gen-reps, --batch must be >= 1, --seq >= 2, "
                 "--rounds >= 0\n");
    return 2;
  }
  args.rounds = args.rounds == 0 ? args.steps : std::min(args.rounds, args.steps);
  if (args.small) {
    args.seq = 64;
    args.new_tokens = 32;
    args.prompt = 16;
  }
  // The same process settings on both sides: malloc thresholds, intra-op threads (the
  // child calls torch.set_num_threads), OpenBLAS threads.
  std::vector<std::pair<std::string, std::string>> child_env = {
      {"OPENBLAS_NUM_THREADS", std::to_string(args.threads)}};
  if (args.pin_malloc) {
    ::mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
    ::mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
    child_env.emplace_back("GLIBC_TUNABLES",
                           fmt::format("glibc.malloc.mmap_threshold={}:glibc.malloc.trim_threshold={}",
                                       kMmapThreshold, kTrimThreshold));
  }
  at::set_num_threads(args.threads);
  const bool openblas = SetOpenBlasThreads(args.threads);
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

  std::unique_ptr<PythonBaseline> py;
  if (args.python) {
    py = PythonBaseline::Start(
        {EGCA_TORCH_PYTHON, EGCA_MODEL_BENCH_SCRIPT, "--checkpoint", dir, "--threads",
         std::to_string(args.threads), "--batch", std::to_string(args.batch), "--seq",
         std::to_string(args.seq), "--gen-batch", std::to_string(args.gen_batch), "--prompt",
         std::to_string(args.prompt), "--new-tokens", std::to_string(args.new_tokens)},
        child_env);
    if (py == nullptr) {
      std::fprintf(stderr, "model_bench: cannot start %s\n", EGCA_TORCH_PYTHON);
      return 1;
    }
  }
  // Every reply is checked: a failed Python side disables the Python column, not the run.
  auto call = [&](const std::string& command) -> json {
    if (py == nullptr) return json(json::value_t::discarded);
    json reply = py->Call(command);
    if (reply.is_discarded()) {
      std::fprintf(stderr, "model_bench: python baseline failed on '%s'\n", command.c_str());
      py.reset();
    }
    return reply;
  };

  // Forward + backward. Two warm-up steps per side (first-call costs: allocator growth,
  // OpenBLAS buffers, lazy initializations), then `rounds` turns of steps/rounds steps each.
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
  double py_loss = std::nan("");
  if (json r = call("warmup 2"); !r.is_discarded()) py_loss = r.at("loss").get<double>();

  std::vector<Usage> cpp_steps, py_steps;
  std::vector<double> pair_ratio;  // per turn: Python step CPU time / C++ step CPU time
  for (int r = 0; r < args.rounds; ++r) {
    const int n = args.steps / args.rounds + (r < args.steps % args.rounds ? 1 : 0);
    std::vector<Usage> c, p;
    for (int i = 0; i < n; ++i) {
      Meter m;
      step();
      c.push_back(m.Stop());
    }
    if (json reply = call(fmt::format("steps {}", n)); !reply.is_discarded()) {
      for (const auto& s : reply.at("steps")) p.push_back(UsageFromJson(s));
      pair_ratio.push_back(MedianOf(p, &Usage::cpu_ms) / MedianOf(c, &Usage::cpu_ms));
    }
    cpp_steps.insert(cpp_steps.end(), c.begin(), c.end());
    py_steps.insert(py_steps.end(), p.begin(), p.end());
  }

  if (!args.profile_dir.empty()) {
    std::filesystem::create_directories(args.profile_dir);
    std::vector<std::string> cpp_traces, py_traces;
    for (int i = 0; i < kProfiledSteps; ++i) {
      cpp_traces.push_back(fmt::format("{}/cpp_step{}.json", args.profile_dir, i));
      {
        torch::autograd::profiler::RecordProfile guard(cpp_traces.back());
        step();
      }
      const std::string py_trace = fmt::format("{}/python_step{}.json", args.profile_dir, i);
      if (!call("profile " + py_trace).is_discarded()) py_traces.push_back(py_trace);
    }
    if (py_traces.empty()) py_traces = cpp_traces;  // no Python side: C++ in both columns
    PrintProfileComparison(cpp_traces, py_traces);
  }

  // Generation: per mode, a warm-up run on each side, then one timed run on each side.
  at::Tensor prompt_ids = FixedIds(args.gen_batch, args.prompt, config.vocab_size);
  std::vector<std::vector<int32_t>> prompts(args.gen_batch);
  for (int64_t b = 0; b < args.gen_batch; ++b) {
    for (int64_t t = 0; t < args.prompt; ++t) {
      prompts[b].push_back(static_cast<int32_t>(prompt_ids[b][t].item<int64_t>()));
    }
  }
  // Tokens per CPU second and per wall second of each timed run.
  struct GenRates {
    std::vector<double> cpu, wall;
    void Add(double tokens, const Usage& u) {
      cpu.push_back(1000 * tokens / u.cpu_ms);
      wall.push_back(1000 * tokens / u.wall_ms);
    }
  };
  GenRates gen_cpp[2], gen_py[2];
  for (int use_cache = 1; use_cache >= 0; --use_cache) {
    egca::trainer::SamplingOptions o;
    o.set_temperature(0).set_max_new_tokens(args.new_tokens).set_use_kv_cache(use_cache == 1);
    const std::string py_command = fmt::format("generate {}", use_cache);
    (void)egca::trainer::Generate(model, prompts, o);
    (void)call(py_command);
    for (int rep = 0; rep < args.gen_reps; ++rep) {
      Meter m;
      auto out = egca::trainer::Generate(model, prompts, o);
      const Usage u = m.Stop();
      double tokens = 0;
      for (const auto& c : *out) tokens += static_cast<double>(c.token_ids.size());
      gen_cpp[use_cache].Add(tokens, u);
      if (json r = call(py_command); !r.is_discarded()) {
        gen_py[use_cache].Add(r.at("tokens").get<double>(), UsageFromJson(r));
      }
    }
  }
  py.reset();

  std::printf(
      "model_bench: qwen3-style hidden %lld, %lld layers, %lld/%lld heads, vocab %lld, "
      "%d thread(s), LibTorch %s, %s, malloc %s\n",
      static_cast<long long>(config.hidden_size), static_cast<long long>(config.num_hidden_layers),
      static_cast<long long>(config.num_attention_heads),
      static_cast<long long>(config.num_key_value_heads), static_cast<long long>(config.vocab_size),
      args.threads, TORCH_VERSION, openblas ? "OpenBLAS" : "BLAS without OpenBLAS (slow?)",
      args.pin_malloc ? "pinned" : "default");
  std::printf("%-46s %12s %12s %10s\n", "measure", "C++", "Python", "C++ vs Py");
  // ratio > 1 means C++ is faster: Py/C++ for times, C++/Py for rates.
  auto row = [&](const std::string& name, double cpp, double p, bool higher_is_better,
                 bool ratio = true) {
    std::string r = "-";
    if (ratio && p > 0 && cpp > 0) r = fmt::format("{:.3f}x", higher_is_better ? cpp / p : p / cpp);
    std::printf("%-46s %12.2f %12s %10s\n", name.c_str(), cpp,
                p > 0 || !py_steps.empty() ? fmt::format("{:.2f}", p).c_str() : "-", r.c_str());
  };
  row(fmt::format("fwd+bwd step CPU ms (batch {} x {} tokens)", args.batch, args.seq),
      MedianOf(cpp_steps, &Usage::cpu_ms), MedianOf(py_steps, &Usage::cpu_ms), false);
  row("  of which user ms", MedianOf(cpp_steps, &Usage::user_ms),
      MedianOf(py_steps, &Usage::user_ms), false);
  row("  of which system ms", MedianOf(cpp_steps, &Usage::sys_ms),
      MedianOf(py_steps, &Usage::sys_ms), false, false);
  row("  minor page faults per step", MedianOf(cpp_steps, &Usage::minflt),
      MedianOf(py_steps, &Usage::minflt), false, false);
  row("fwd+bwd step wall ms", MedianOf(cpp_steps, &Usage::wall_ms),
      MedianOf(py_steps, &Usage::wall_ms), false);
  // Generation rows: median over the --gen-reps timed runs of each side.
  row(fmt::format("generate tok/CPU-s, KV cache ({} x {} new)", args.gen_batch, args.new_tokens),
      Median(gen_cpp[1].cpu), Median(gen_py[1].cpu), true);
  row(fmt::format("generate tok/CPU-s, no cache ({} x {} new)", args.gen_batch, args.new_tokens),
      Median(gen_cpp[0].cpu), Median(gen_py[0].cpu), true);
  row("generate tok/s wall, KV cache", Median(gen_cpp[1].wall), Median(gen_py[1].wall), true);
  row("generate tok/s wall, no cache", Median(gen_cpp[0].wall), Median(gen_py[0].wall), true);
  std::printf("KV cache speed-up (CPU time): C++ %.2fx",
              Median(gen_cpp[1].cpu) / Median(gen_cpp[0].cpu));
  if (Median(gen_py[0].cpu) > 0) {
    std::printf(", Python %.2fx", Median(gen_py[1].cpu) / Median(gen_py[0].cpu));
  }
  std::printf("\n");
  if (!pair_ratio.empty()) {
    auto sorted = pair_ratio;
    std::sort(sorted.begin(), sorted.end());
    std::printf("step CPU time Py/C++ per turn (%zu turns): median %.3fx, range %.3f-%.3f\n",
                sorted.size(), Median(sorted), sorted.front(), sorted.back());
  }
  std::printf("C++ vs Py > 1 means C++ is faster.\n");
  std::printf("loss C++ %.6f", loss);
  if (!std::isnan(py_loss)) {
    std::printf("  Python %.6f  |diff| %.2e%s", py_loss, std::abs(py_loss - loss),
                std::abs(py_loss - loss) < 1e-4 ? "" : "  MISMATCH");
  }
  std::printf("\n");
  std::filesystem::remove_all(dir);
  return 0;
}
