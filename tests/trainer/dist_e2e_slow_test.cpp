// Data-parallel egca-train on CPU (c10d Gloo), end to end with the real binary, the real
// sandboxed executors and a tiny random Qwen3-shaped model fed fixed completions
// (--rollouts: a random model writes no code, so its rewards would all be 0 and nothing
// would train):
//   * 2 ranks x 1 prompt (torchrun --standalone, which picks a free port) end with the same
//     weights as 1 rank x 2 prompts after 3 steps, within kWeightTolerance (the gradient
//     is summed in another order); the rollout dumps (and trees) are byte-identical, the
//     rewards equal; EGCA and uniform credit, single- and multi-turn.
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

#include <chrono>
#include <filesystem>
#include <fstream>
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

// Float32 weights after 3 steps (6 AdamW steps at lr 1e-3): the 2-rank gradient is the
// 1-rank gradient summed in another order, so the weights may differ in the last bits,
// amplified a little by Adam's normalization. Measured: see docs/PERFORMANCE.md.
constexpr double kWeightTolerance = 1e-5;

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
// of 3 (two per rank and pass: the last one's backward overlaps the all-reduce), mu = 2.
std::string WriteConfig(const std::string& path, const std::string& model, const std::string& run,
                        const std::string& target, int turns) {
  std::ofstream out(path);
  out << "model: " << model << "\nrun_dir: " << run << "\ndata:\n  train: " << kHumanEval
      << "\n  train_limit: 2\n  shuffle: true\n"
      << "rollout:\n  group_size: 4\n  prompts_per_step: 2\n  max_new_tokens: 400\n"
      << "route:\n  workers: 1\n  timeout: 20\n"
      << "credit:\n  target: " << target << "\n"
      << "loss:\n  beta: 0.05\n"
      << "optim:\n  steps: 3\n  lr: 1e-3\n  micro_batch: 3\n  mu: 2\n"
      << "run:\n  save_every: 1\n  keep_checkpoints: 0\n  threads: 1\n  seed: 7\n"
      << "train:\n  timeout: 600\n  heartbeat_timeout: 20\n  check_every: 1\n";
  if (turns > 1)
    out << "multi_turn:\n  turns: " << turns << "\n  group_size: 2\n  feedback: plain\n";
  return path;
}

using testing::Slurp;

// Largest |a - b| over every parameter of two checkpoints.
double MaxWeightDifference(const std::string& a, const std::string& b) {
  auto ma = LoadCheckpoint(a, LoadOptions(at::kCPU));
  auto mb = LoadCheckpoint(b, LoadOptions(at::kCPU));
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

struct Case {
  std::string target;
  int turns;
};

class DistEquivalence : public ::testing::TestWithParam<Case> {};

TEST_P(DistEquivalence, TwoRanksMatchOneRankWithTheWholeBatch) {
  const Case c = GetParam();
  testing::ScratchDir dir("dist_eq_" + c.target + std::to_string(c.turns));
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  const std::string rollouts = WriteRollouts(dir.file("rollouts.json"));
  const std::string one = dir.file("one"), two = dir.file("two");
  const std::string cfg1 = WriteConfig(dir.file("one.yaml"), model, one, c.target, c.turns);
  const std::string cfg2 = WriteConfig(dir.file("two.yaml"), model, two, c.target, c.turns);
  auto r1 = egca::testing::RunCommand("timeout -k 10 600 " + kTrain + " --quiet --config " + cfg1 +
                                      " --rollouts " + rollouts + " 2>&1");
  ASSERT_EQ(r1.exit_code, 0) << r1.out;
  auto r2 = egca::testing::RunCommand(
      "timeout -k 10 600 " + kTorchrun + " --standalone --nproc_per_node 2 --no_python " + kTrain +
      " --quiet --config " + cfg2 + " --rollouts " + rollouts + " 2>&1");
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
  const double diff = MaxWeightDifference(one + "/checkpoints/step-3", two + "/checkpoints/step-3");
  std::printf("max |w_1rank - w_2ranks| after 3 steps (%s, %d turn(s)): %.3g\n", c.target.c_str(),
              c.turns, diff);
  EXPECT_LE(diff, kWeightTolerance);
  // The weights moved: the equality is not that of two untouched models.
  EXPECT_GT(MaxWeightDifference(model, two + "/checkpoints/step-3"), 1e-4);
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
