// Data-parallel egca-train on CPU (c10d Gloo), end to end with the real binary, the real
// sandboxed executors and a tiny random Qwen3-shaped model fed fixed completions
// (--rollouts: a random model writes no code, so its rewards would all be 0 and nothing
// would train):
//   * 2 ranks x 1 prompt (torchrun --standalone, which picks a free port) against 1 rank x 2
//     prompts: the rollout dumps (and trees) byte-identical, the rewards equal; the first
//     optimizer step's summed gradient equal within a bound derived from the arithmetic's
//     rounding (float64 and float32 runs), the same on both ranks bit for bit; the weights
//     after 3 steps equal within a tolerance derived from that bound and AdamW's
//     sensitivity (float64 runs); EGCA and uniform credit, single- and multi-turn. The
//     derivations are at kCoupling and GradientBound below.
//   * SIGKILL of one rank mid-step: the other exits within its heartbeat timeout with one
//     line naming the dead rank; --resume (2 ranks) continues from the last complete
//     checkpoint and ends bitwise equal to an uninterrupted 2-rank run.
// Every process runs under `timeout` and is reaped; nothing depends on the machine's speed
// except the generous deadlines.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <torch/serialize.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/run_command.h"
#include "egca/core/files.h"
#include "egca/trainer/policy/checkpoint.h"
#include "cli_test_util.h"
#include "model_test_util.h"

namespace egca::trainer {
namespace {

namespace fs = std::filesystem;

const std::string kHumanEval = EGCA_DATA_DIR "/humaneval/HumanEval.jsonl.gz";
const std::string kTrain = EGCA_BINARY_DIR "/tools/egca-train/egca-train";
// Debian's torchrun (torch 1.13 under Python 3.11) fails on its default --redirects/--tee
// "0" (Python 3.11's Flag enums do not iterate the zero member); "1" works on every version.
const std::string kTorchrun = "/usr/bin/python3 -m torch.distributed.run --redirects 1 --tee 1";

// What may differ between 1 rank x 2 prompts and 2 ranks x 1 prompt, and by how much.
//
// Step 1. With micro-batches of one sample (optim.micro_batch: 1) every sample's forward
// and backward has the same shapes and inputs in both runs (the same weights, the same
// pi_old log-probs: the rollout is scored in groups of G = 4 completions, one prompt's, in
// both), so each sample's gradient s_i is the same floating-point tensor in both runs. What
// differs is only the order of the n = 8 additions that sum them: one process accumulates
// s_0 + ... + s_7 into p.grad in turn; two ranks accumulate s_0..s_3 and s_4..s_7, and the
// all-reduce adds the two partial sums. Any order of a floating-point sum of n terms is
// within gamma_{n-1} * sum_i |s_i| of the exact sum (Higham, "Accuracy and Stability of
// Numerical Algorithms", 2nd ed., eq. 4.4; gamma_k = k u / (1 - k u), u the unit roundoff:
// 2^-24 in float32, 2^-53 in float64), so the two results differ by at most
//   |g_1rank - g_2ranks| <= 2 gamma_{n-1} sum_i |s_i|             (element-wise),
// with sum_i |s_i| summed in float64 by egca-train's EGCA_DUMP_GRADIENTS hook. This is what
// the all-reduce must make equal, checked without any tolerance taken from a measurement.
//
// Steps 1-3 (6 AdamW steps, mu = 2). AdamW moves weight j by lr * m_hat / (sqrt(v_hat) +
// eps). m_hat is a convex combination of the gradients so far and sqrt(v_hat) a weighted
// 2-norm of them, so a change of at most D in every gradient changes m_hat and sqrt(v_hat)
// by at most D; with |m_hat| / sqrt(v_hat) <= sqrt(t) (Cauchy-Schwarz over t <= 6 steps,
// < 2.5) the step changes by at most lr * D * (1 + 2.5) / eps (the derivative is largest,
// 1 / eps, where a gradient is near 0). Summed over 6 steps: 6 * 3.5 * lr * D / eps. D is
// the step-1 rounding bound 2 gamma_{n-1} max_j sum_i |s_ij|, times kCoupling for what the
// bound leaves out: later steps' gradients are taken at weights that already differ by
// the bound (their difference is the loss's curvature times it) and their magnitudes grow
// as the policy moves. In float64 the result is ~1e-8 or less; a gradient missing one
// rank's share (or counted twice) moves the weights apart by ~lr = 1e-3 in one step. In
// float32 the same bound is ~1e-2 (lr / eps = 1e5 amplifies u = 6e-8 where a gradient is
// near 0) and decides nothing, which is why the weight comparison runs in float64: the
// float32 check that failed on a fresh machine (2.71e-05 against an observed 1e-05) was a
// tolerance read off one machine's BLAS, not a bound.
constexpr double kCoupling = 100;
constexpr double kLr = 1e-3, kAdamEps = 1e-8;
constexpr int kAdamSteps = 6;  // 3 steps x mu = 2

std::string Fence(const std::string& prose, const std::string& code) {
  return prose + "\n\n```python\n" + code + "```\n";
}

const std::string kHasCloseCorrect =
    "from typing import List\n\n"
    "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
    "    for i in range(len(numbers)):\n"
    "        for j in range(i + 1, len(numbers)):\n"
    "            if abs(numbers[i] - numbers[j]) < threshold:\n"
    "                return True\n"
    "    return False\n";
const std::string kHasCloseBug =
    "from typing import List\n\n"
    "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
    "    for i in range(len(numbers)):\n"
    "        for j in range(i + 1, len(numbers)):\n"
    "            if abs(numbers[i] - numbers[j]) > threshold:\n"
    "                return True\n"
    "    return False\n";
const std::string kParenCorrect =
    "from typing import List\n\n"
    "def separate_paren_groups(paren_string: str) -> List[str]:\n"
    "    result = []\n"
    "    current = []\n"
    "    depth = 0\n"
    "    for c in paren_string:\n"
    "        if c == '(':\n"
    "            depth += 1\n"
    "            current.append(c)\n"
    "        elif c == ')':\n"
    "            depth -= 1\n"
    "            current.append(c)\n"
    "            if depth == 0:\n"
    "                result.append(''.join(current))\n"
    "                current.clear()\n"
    "    return result\n";
const std::string kParenBug =  // never starts a new group
    "from typing import List\n\n"
    "def separate_paren_groups(paren_string: str) -> List[str]:\n"
    "    result = []\n"
    "    current = []\n"
    "    depth = 0\n"
    "    for c in paren_string:\n"
    "        if c == '(':\n"
    "            depth += 1\n"
    "            current.append(c)\n"
    "        elif c == ')':\n"
    "            depth -= 1\n"
    "            current.append(c)\n"
    "            if depth == 0:\n"
    "                result.append(''.join(current))\n"
    "    return result\n";

std::string WriteRollouts(const std::string& path) {
  nlohmann::json j;
  j["HumanEval/0"] = {Fence("Here is the solution.", kHasCloseCorrect), Fence("Try:", kHasCloseBug),
                      Fence("Oops", "def has_close_elements(numbers, threshold)\n    return 0\n"),
                      Fence("Again:", kHasCloseBug)};
  j["HumanEval/1"] = {Fence("Solution:", kParenBug), Fence("Solution:", kParenCorrect),
                      Fence("Solution:", kParenBug), Fence("Solution:", kParenCorrect)};
  std::ofstream(path) << j.dump();
  return path;
}

// 2 prompts per global step over 2 problems (reshuffled every epoch), G = 4, micro-batches
// of one sample (several per rank and pass: the last one's backward overlaps the
// all-reduce; one sample each so that every sample's gradient is the same computation in
// both runs, see GradientBound), mu = 2.
std::string WriteConfig(const std::string& path, const std::string& model, const std::string& run,
                        const std::string& target, int turns, const std::string& dtype = "float32",
                        int steps = 3) {
  std::ofstream out(path);
  out << "model: " << model << "\nrun_dir: " << run << "\ndata:\n  train: " << kHumanEval
      << "\n  train_limit: 2\n  shuffle: true\n"
      << "rollout:\n  group_size: 4\n  prompts_per_step: 2\n  max_new_tokens: 400\n"
      << "route:\n  workers: 1\n  timeout: 20\n"
      << "credit:\n  target: " << target << "\n"
      << "loss:\n  beta: 0.05\n"
      << "optim:\n  steps: " << steps << "\n  lr: 1e-3\n  micro_batch: 1\n  mu: 2\n"
      << "run:\n  save_every: 1\n  keep_checkpoints: 0\n  threads: 1\n  seed: 7\n  dtype: "
      << dtype << "\n"
      << "train:\n  timeout: 600\n  heartbeat_timeout: 20\n  check_every: 1\n";
  if (turns > 1)
    out << "multi_turn:\n  turns: " << turns << "\n  group_size: 2\n  feedback: plain\n";
  return path;
}

using testing::Slurp;

// Largest |a - b| over every parameter of two checkpoints (compared in float64).
double MaxWeightDifference(const std::string& a, const std::string& b) {
  auto ma = LoadCheckpoint(a, LoadOptions(at::kCPU).set_dtype(at::kDouble));
  auto mb = LoadCheckpoint(b, LoadOptions(at::kCPU).set_dtype(at::kDouble));
  if (!ma.ok() || !mb.ok()) return 1e9;
  auto pa = (*ma)->parameters();
  auto pb = (*mb)->parameters();
  if (pa.size() != pb.size()) return 1e9;
  double worst = 0;
  for (size_t i = 0; i < pa.size(); ++i)
    worst = std::max(worst, (pa[i] - pb[i]).abs().max().item<double>());
  return worst;
}

std::vector<nlohmann::json> TrainMetrics(const std::string& run) {
  std::vector<nlohmann::json> out;
  std::ifstream in(run + "/metrics.jsonl");
  for (std::string l; std::getline(in, l);) {
    auto j = nlohmann::json::parse(l);
    if (j["kind"] == "train") out.push_back(j);
  }
  return out;
}

// One rank's EGCA_DUMP_GRADIENTS file (see policy_update.cpp): name -> tensor.
std::map<std::string, at::Tensor> ReadDump(const std::string& path) {
  std::map<std::string, at::Tensor> out;
  torch::serialize::InputArchive archive;
  archive.load_from(path);
  for (const std::string& key : archive.keys()) {
    at::Tensor t;
    archive.read(key, t);
    out[key] = t;
  }
  return out;
}

// The step-1 check (see the derivation above kCoupling): every element of the summed
// gradient of the 2-rank run within 2 gamma_{n-1} sum_i |s_i| of the 1-rank run's. Returns
// D = max_j of that bound, for the weight tolerance.
double CheckStepOneGradients(const std::string& one_dir, const std::string& two_dir, double unit_roundoff) {
  const auto one = ReadDump(one_dir + "/rank-0.pt");
  const auto two0 = ReadDump(two_dir + "/rank-0.pt");
  const auto two1 = ReadDump(two_dir + "/rank-1.pt");
  const int64_t n = one.at("micro_batches").item<int64_t>();
  EXPECT_EQ(n, two0.at("micro_batches").item<int64_t>() + two1.at("micro_batches").item<int64_t>());
  const double gamma = (n - 1) * unit_roundoff / (1 - (n - 1) * unit_roundoff);
  double worst_ratio = 0, d_max = 0, g_max = 0;
  std::string worst;
  int64_t grads = 0;
  for (const auto& [key, g1] : one) {
    if (key.rfind("grad_", 0) != 0) continue;
    ++grads;
    const std::string name = key.substr(5);
    const at::Tensor g2 = two0.at(key).to(at::kDouble), g2b = two1.at(key).to(at::kDouble);
    // What the all-reduce hands every rank is the same, bit for bit.
    EXPECT_TRUE(at::equal(two0.at(key), two1.at(key))) << name;
    // This rank's abs sums are the 1-rank run's (the same per-sample gradients).
    const at::Tensor abs_sum = one.at("abs_" + name);
    EXPECT_TRUE(at::allclose(abs_sum, two0.at("abs_" + name) + two1.at("abs_" + name), 1e-6, 0)) << name;
    const at::Tensor bound = 2 * gamma * abs_sum;
    const at::Tensor diff = (g1.to(at::kDouble) - g2).abs();
    const double ratio = (diff / (bound + 1e-300)).max().item<double>();
    if (ratio > worst_ratio) worst_ratio = ratio, worst = name;
    EXPECT_TRUE((diff <= bound).all().item<bool>())
        << name << ": |g_1rank - g_2ranks| exceeds 2 gamma_" << n - 1 << " sum |s_i| by up to "
        << ((diff - bound).max().item<double>()) << " (max |g| " << g1.abs().max().item<double>() << ")";
    d_max = std::max(d_max, bound.max().item<double>());
    g_max = std::max(g_max, g1.abs().max().item<double>());
  }
  EXPECT_GT(grads, 10);
  EXPECT_GT(g_max, 0.0);  // a gradient to compare
  std::printf("step-1 gradients (u = %.3g, n = %lld): largest |g| %.3g, largest bound %.3g, worst diff/bound %.3g (%s)\n",
              unit_roundoff, static_cast<long long>(n), g_max, d_max, worst_ratio, worst.c_str());
  return d_max;
}

std::string Launch(const std::string& dump, const std::string& cmd) {
  return "EGCA_DUMP_GRADIENTS=" + dump + " timeout -k 10 600 " + cmd + " 2>&1";
}

struct Case {
  std::string target;
  int turns;
};

class DistEquivalence : public ::testing::TestWithParam<Case> {};

// float64 runs: the step-1 gradient bound and the 3-step weight tolerance (see above).
TEST_P(DistEquivalence, TwoRanksMatchOneRankWithTheWholeBatch) {
  const Case c = GetParam();
  testing::ScratchDir dir("dist_eq_" + c.target + std::to_string(c.turns));
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  const std::string rollouts = WriteRollouts(dir.file("rollouts.json"));
  const std::string one = dir.file("one"), two = dir.file("two");
  const std::string dump1 = dir.file("dump1"), dump2 = dir.file("dump2");
  fs::create_directories(dump1);
  fs::create_directories(dump2);
  const std::string cfg1 = WriteConfig(dir.file("one.yaml"), model, one, c.target, c.turns, "float64");
  const std::string cfg2 = WriteConfig(dir.file("two.yaml"), model, two, c.target, c.turns, "float64");
  auto r1 = egca::testing::RunCommand(
      Launch(dump1, kTrain + " --quiet --config " + cfg1 + " --rollouts " + rollouts));
  ASSERT_EQ(r1.exit_code, 0) << r1.out;
  auto r2 = egca::testing::RunCommand(
      Launch(dump2, kTorchrun + " --standalone --nproc_per_node 2 --no_python " + kTrain +
                        " --quiet --config " + cfg2 + " --rollouts " + rollouts));
  ASSERT_EQ(r2.exit_code, 0) << r2.out;

  // The same samples, routed and credited the same, in the same (global) order.
  for (int s = 1; s <= 3; ++s) {
    const std::string a = Slurp(one + "/rollouts/step-" + std::to_string(s) + ".jsonl");
    const std::string b = Slurp(two + "/rollouts/step-" + std::to_string(s) + ".jsonl");
    ASSERT_FALSE(a.empty());
    EXPECT_TRUE(a == b) << "rollout dump of step " << s << " differs";
    if (c.turns > 1) {
      EXPECT_EQ(Slurp(one + "/trees/step-" + std::to_string(s) + ".txt"),
                Slurp(two + "/trees/step-" + std::to_string(s) + ".txt"));
    }
  }
  // Metrics over the whole batch: exact counts, sums up to the order of addition.
  const auto m1 = TrainMetrics(one), m2 = TrainMetrics(two);
  ASSERT_EQ(m1.size(), 3u);
  ASSERT_EQ(m2.size(), 3u);  // logged once, by rank 0
  for (size_t s = 0; s < 3; ++s) {
    for (const char* k :
         {"reward", "reward_std", "mode/logic", "mode/correct", "mode/syntax",
          "completions/max_length", "completions/mean_length", "credit/localized"}) {
      EXPECT_DOUBLE_EQ(m1[s][k].get<double>(), m2[s][k].get<double>()) << k << " step " << s + 1;
    }
    for (const char* k : {"loss", "kl", "grad_norm", "ratio_max", "entropy"}) {
      EXPECT_NEAR(m1[s][k].get<double>(), m2[s][k].get<double>(),
                  1e-5 * std::max(1.0, std::abs(m1[s][k].get<double>())))
          << k << " step " << s + 1;
    }
    EXPECT_FALSE(m1[s].contains("dist/world_size"));
    EXPECT_EQ(m2[s]["dist/world_size"].get<double>(), 2.0);
    EXPECT_GT(m2[s]["dist/gradient_bytes"].get<double>(), 0.0);
  }
  EXPECT_GT(m1[0]["grad_norm"].get<double>(), 0.0);  // the test trains something
  const double d = CheckStepOneGradients(dump1, dump2, std::ldexp(1.0, -53));
  const double tolerance = kCoupling * kAdamSteps * 3.5 * kLr * d / kAdamEps;
  const double diff = MaxWeightDifference(one + "/checkpoints/step-3", two + "/checkpoints/step-3");
  std::printf("max |w_1rank - w_2ranks| after 3 steps (%s, %d turn(s), float64): %.3g, derived tolerance %.3g\n",
              c.target.c_str(), c.turns, diff, tolerance);
  EXPECT_LE(diff, tolerance);
  // The tolerance still tells a missing or doubled rank's share (~lr) from rounding.
  EXPECT_LT(tolerance, 1e-2 * kLr);
  // The weights moved: the equality is not that of two untouched models.
  EXPECT_GT(MaxWeightDifference(model, two + "/checkpoints/step-3"), 1e-4);
}

// The production dtype: float32 runs of one step, the step-1 gradients against the same
// bound with u = 2^-24 (the case that failed on a fresh machine: uniform credit, 1 turn).
TEST(DistEquivalenceFloat32, StepOneGradientsWithinTheRoundingBound) {
  testing::ScratchDir dir("dist_eq_f32");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  const std::string rollouts = WriteRollouts(dir.file("rollouts.json"));
  const std::string one = dir.file("one"), two = dir.file("two");
  const std::string dump1 = dir.file("dump1"), dump2 = dir.file("dump2");
  fs::create_directories(dump1);
  fs::create_directories(dump2);
  const std::string cfg1 = WriteConfig(dir.file("one.yaml"), model, one, "uniform", 1, "float32", 1);
  const std::string cfg2 = WriteConfig(dir.file("two.yaml"), model, two, "uniform", 1, "float32", 1);
  auto r1 = egca::testing::RunCommand(
      Launch(dump1, kTrain + " --quiet --config " + cfg1 + " --rollouts " + rollouts));
  ASSERT_EQ(r1.exit_code, 0) << r1.out;
  auto r2 = egca::testing::RunCommand(
      Launch(dump2, kTorchrun + " --standalone --nproc_per_node 2 --no_python " + kTrain +
                        " --quiet --config " + cfg2 + " --rollouts " + rollouts));
  ASSERT_EQ(r2.exit_code, 0) << r2.out;
  CheckStepOneGradients(dump1, dump2, std::ldexp(1.0, -24));
}

INSTANTIATE_TEST_SUITE_P(CreditAndTurns, DistEquivalence,
                         ::testing::Values(Case{"earliest", 1}, Case{"uniform", 1},
                                           Case{"earliest", 2}, Case{"uniform", 2}),
                         [](const auto& info) {
                           return info.param.target + "_" + std::to_string(info.param.turns) +
                                  "turn";
                         });

// A port nobody listens on now (the kernel's choice; the store binds it right after).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// Starts one rank by hand (what torchrun does), stderr to `log`.
pid_t StartRank(int rank, int port, const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    dup2(fd, 1);
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
    std::vector<char*> argv = {const_cast<char*>(kTrain.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(kTrain.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

// Waits for `pid` up to `limit`; SIGKILLs it past that. The exit status, or -1 if killed.
int Reap(pid_t pid, std::chrono::seconds limit, double* seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - t0 > limit) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(DistFaults, KilledRankEndsTheJobAndResumeMatchesAnUninterruptedRun) {
  testing::ScratchDir dir("dist_kill");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  const std::string rollouts = WriteRollouts(dir.file("rollouts.json"));
  const std::string full = dir.file("full"), killed = dir.file("killed");
  const std::string cfg_full = WriteConfig(dir.file("full.yaml"), model, full, "earliest", 1);
  const std::string cfg_killed = WriteConfig(dir.file("killed.yaml"), model, killed, "earliest", 1);
  const std::string launch = "timeout -k 10 600 " + kTorchrun +
                             " --standalone --nproc_per_node 2 --no_python " + kTrain +
                             " --quiet --rollouts " + rollouts;
  auto a = egca::testing::RunCommand(launch + " --config " + cfg_full + " 2>&1");
  ASSERT_EQ(a.exit_code, 0) << a.out;

  // The same run, rank 1 killed as soon as the step-1 checkpoint is complete (mid step 2).
  const int port = FreePort();
  const std::vector<std::string> args = {"--quiet", "--config", cfg_killed, "--rollouts", rollouts};
  const pid_t r0 = StartRank(0, port, args, dir.file("rank0.log"));
  const pid_t r1 = StartRank(1, port, args, dir.file("rank1.log"));
  testing::WaitForFile(killed + "/checkpoints/step-1/trainer_state.json", std::chrono::seconds(400));
  kill(r1, SIGKILL);
  double t1 = 0, t0 = 0;
  Reap(r1, std::chrono::seconds(60), &t1);
  // heartbeat_timeout is 20 s; the bound leaves room for a loaded machine.
  const int code0 = Reap(r0, std::chrono::seconds(120), &t0);
  const std::string log0 = Slurp(dir.file("rank0.log"));
  ASSERT_FALSE(fs::exists(killed + "/checkpoints/step-3")) << "the run ended before the kill";
  EXPECT_EQ(code0, 1) << log0;
  std::printf("rank 0 exited %.1f s after rank 1 was killed: %s", t0, log0.c_str());
  // One line naming this rank and the reason (a lost peer in a collective, or rank 1's
  // missing heartbeat, whichever comes first).
  EXPECT_EQ(std::count(log0.begin(), log0.end(), '\n'), 1) << log0;
  EXPECT_NE(log0.find("egca-train: rank 0: "), std::string::npos) << log0;

  // Resume on 2 ranks from the last complete checkpoint: the uninterrupted run's weights.
  auto b = egca::testing::RunCommand(launch + " --resume " + killed + " 2>&1");
  ASSERT_EQ(b.exit_code, 0) << b.out;
  EXPECT_NE(b.out.find("resumed"), std::string::npos) << b.out;
  const std::string wa = Slurp(full + "/checkpoints/step-3/model.safetensors");
  const std::string wb = Slurp(killed + "/checkpoints/step-3/model.safetensors");
  ASSERT_FALSE(wa.empty());
  EXPECT_TRUE(wa == wb) << "resumed weights differ from the uninterrupted run's";
  std::vector<int64_t> steps;
  for (const auto& j : TrainMetrics(killed)) steps.push_back(j["step"].get<int64_t>());
  EXPECT_EQ(steps.back(), 3);
}

}  // namespace
}  // namespace egca::trainer
