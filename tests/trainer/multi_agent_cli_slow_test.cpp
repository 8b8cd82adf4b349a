// Cooperating agents through the egca-train binary: two tiny agents, 2 HumanEval problems,
// 2 turns, align and cross, every transition once, and SIGKILL + resume giving identical
// weights for both agents. Labelled slow (each run takes minutes on 2 cores); the scripted
// tree and the bad-configuration errors are in multi_agent_e2e_test.cpp.
#include <fcntl.h>
#include <signal.h>
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
#include "egca/datasets/datasets.h"
#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/rl/multi_agent.h"
#include "cli_test_util.h"
#include "model_test_util.h"

namespace egca::trainer {
namespace {

namespace fs = std::filesystem;

const std::string kTokenizerDir = testing::kQwen3TokenizerDir;
const std::string kHumanEval = EGCA_DATA_DIR "/humaneval/HumanEval.jsonl.gz";
const std::string kTrain = EGCA_BINARY_DIR "/tools/egca-train/egca-train";

// ---- the egca-train binary ---------------------------------------------------------------

std::string WriteConfig(const std::string& path, const std::string& model,
                        const std::string& run_dir, const std::string& extra) {
  std::ofstream(path) << "run_dir: " << run_dir << "\ndata:\n  train: " << kHumanEval
                      << "\n  train_limit: 2\n  shuffle: false\n"
                      << "rollout:\n  group_size: 2\n  prompts_per_step: 2\n  max_new_tokens: 8\n"
                      << "optim:\n  steps: 2\n  lr: 1e-3\n  micro_batch: 8\n"
                      << "run:\n  save_every: 1\n  keep_checkpoints: 0\n"
                      << "multi_agent:\n  agents:\n    - name: aux\n      model: " << model
                      << "\n    - name: main\n      model: " << model << "\n"
                      << extra;
  return path;
}

class EgcaTrainMultiAgentCli : public ::testing::TestWithParam<std::string> {};

// "<mode>/<transition>": a 2-turn, 2-step run.
TEST_P(EgcaTrainMultiAgentCli, TrainsBothAgents) {
  const std::string param = GetParam();
  const std::string mode = param.substr(0, param.find('/'));
  const std::string transition = param.substr(param.find('/') + 1);
  testing::ScratchDir dir("ma_cli_" + mode + "_" + transition);
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  std::ofstream(dir.file("hook.sh"))
      << "#!/bin/sh\ncat >/dev/null\necho '[\"Revise aux.\", \"Revise main.\"]'\n";
  fs::permissions(dir.file("hook.sh"), fs::perms::owner_all);
  std::string extra =
      "  joint_mode: " + mode + "\nmulti_turn:\n  turns: 2\n  feedback: " + transition + "\n";
  if (transition == "custom") extra += "  feedback_command: " + dir.file("hook.sh") + "\n";
  if (transition == "expert_edits")
    extra += "  expert_model: " + model + "\n  expert_max_new_tokens: 8\n";
  const std::string run = dir.file("run");
  const std::string cfg = WriteConfig(dir.file("c.yaml"), model, run, extra);
  auto r = egca::testing::RunCommand(kTrain + " --config " + cfg + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("step 2/2"), std::string::npos) << r.out;
  for (const char* name : {"aux", "main"}) {
    for (const char* f : {"checkpoints/step-2/model.safetensors", "checkpoints/step-1/optimizer.pt",
                          "metrics.jsonl"}) {
      EXPECT_TRUE(fs::exists(run + "/agents/" + name + "/" + f)) << name << "/" << f;
    }
  }
  std::ifstream in(run + "/metrics.jsonl");
  int lines = 0;
  const double per_turn = mode == "cross" ? 4 : 2;
  for (std::string l; std::getline(in, l);) {
    auto j = nlohmann::json::parse(l);
    ++lines;
    EXPECT_DOUBLE_EQ(j["joint/responses_turn1"].get<double>(), per_turn);
    EXPECT_DOUBLE_EQ(j["joint/responses_turn2"].get<double>(),
                     per_turn * per_turn);  // every node expanded
    EXPECT_TRUE(j.contains("agent/aux/loss"));
    EXPECT_TRUE(j.contains("blame/main"));
  }
  EXPECT_EQ(lines, 2);
  std::ifstream roll(run + "/rollouts/step-1.jsonl");
  int turn2 = 0;
  for (std::string l; std::getline(roll, l);) {
    auto j = nlohmann::json::parse(l);
    if (j["turn"] != 2) continue;
    ++turn2;
    const std::string prompt = j["prompt"];
    if (transition == "custom") {
      EXPECT_NE(prompt.find(j["agent"] == "aux" ? "Revise aux." : "Revise main."),
                std::string::npos);
    } else if (transition == "expert_edits") {
      EXPECT_NE(prompt.find("Suggested edits:"), std::string::npos);
    } else {
      EXPECT_NE(prompt.find("The joint program above is not correct yet"), std::string::npos);
    }
  }
  EXPECT_EQ(turn2, static_cast<int>(2 * 2 * per_turn * 2));  // agents * problems * nodes * G
}

INSTANTIATE_TEST_SUITE_P(Modes, EgcaTrainMultiAgentCli,
                         ::testing::Values("align/plain", "align/level_feedback", "align/egca",
                                           "align/expert_edits", "align/custom",
                                           "cross/level_feedback"),
                         [](const auto& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '/', '_');
                           return s;
                         });

TEST(EgcaTrainMultiAgentCli, SigkillAndResumeGiveTheSameWeightsForBothAgents) {
  testing::ScratchDir dir("ma_cli_kill");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  const std::string extra = "  joint_mode: align\nmulti_turn:\n  turns: 2\n  feedback: plain\n";
  auto a = egca::testing::RunCommand(
      kTrain + " --config " + WriteConfig(dir.file("a.yaml"), model, dir.file("run_a"), extra) +
      " 2>&1");
  ASSERT_EQ(a.exit_code, 0) << a.out;
  const std::string cfg_b = WriteConfig(dir.file("b.yaml"), model, dir.file("run_b"), extra);
  ASSERT_TRUE(testing::RunAndKillAt(
      {kTrain, "--config", cfg_b}, dir.file("run_b/agents/main/checkpoints/step-1/trainer_state.json"),
      std::chrono::seconds(600)))
      << "the run ended before it was killed";
  ASSERT_FALSE(fs::exists(dir.file("run_b/agents/main/checkpoints/step-2/trainer_state.json")));
  auto b = egca::testing::RunCommand(kTrain + " --resume " + dir.file("run_b") + " 2>&1");
  ASSERT_EQ(b.exit_code, 0) << b.out;
  EXPECT_NE(b.out.find("resumed"), std::string::npos) << b.out;
  for (const char* name : {"aux", "main"}) {
    const std::string wa = testing::Slurp(
        dir.file(std::string("run_a/agents/") + name + "/checkpoints/step-2/model.safetensors"));
    const std::string wb = testing::Slurp(
        dir.file(std::string("run_b/agents/") + name + "/checkpoints/step-2/model.safetensors"));
    ASSERT_FALSE(wa.empty()) << name;
    EXPECT_TRUE(wa == wb) << name << ": resumed weights differ from the uninterrupted run's";
  }
}

}  // namespace
}  // namespace egca::trainer
