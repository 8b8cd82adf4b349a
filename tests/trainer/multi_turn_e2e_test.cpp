// Multi-turn (Murphy) training on CPU with the real executor and fixed generations: a
// scripted two-turn tree whose retained nodes, backed-up rewards and advantages are checked
// against values computed by hand for MaRS, MeRS, InterP, GRPO-MT and MT-GRPO; revision
// prompts carry the task, the previous output and the feedback of each mode; the loss sees
// only each node's generated tokens. Then the egca-train binary: 2 turns, 2 steps, every
// feedback mode once, tree dumps, and resume.
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
#include "egca/credit/reflexicoder.h"
#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/rl/feedback.h"
#include "egca/trainer/rl/grpo_trainer.h"
#include "model_test_util.h"

namespace egca::trainer {
namespace {

namespace fs = std::filesystem;

const std::string kTokenizerDir = testing::kQwen3TokenizerDir;
const std::string kHumanEval = EGCA_DATA_DIR "/humaneval/HumanEval.jsonl.gz";
const std::string kTrain = EGCA_BINARY_DIR "/tools/egca-train/egca-train";

std::string Fence(const std::string& prose, const std::string& code) {
  return prose + "\n\n```python\n" + code + "```\n";
}

const std::string kCorrect =
    "from typing import List\n\n"
    "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
    "    for i in range(len(numbers)):\n"
    "        for j in range(i + 1, len(numbers)):\n"
    "            if abs(numbers[i] - numbers[j]) < threshold:\n"
    "                return True\n"
    "    return False\n";
const std::string kBug =  // the comparison is reversed
    "from typing import List\n\n"
    "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
    "    for i in range(len(numbers)):\n"
    "        for j in range(i + 1, len(numbers)):\n"
    "            if abs(numbers[i] - numbers[j]) > threshold:\n"
    "                return True\n"
    "    return False\n";
const std::string kSyntax = "def has_close_elements(numbers, threshold)\n    return False\n";

// The scripted tree (HumanEval/0 has one test, so r is 0 or 1):
//   turn 1 (G = 4):  n0 correct (r 1), n1 bug (0), n2 syntax (0), n3 bug (0)
//   turn 2 (G_t = 2 per failed node): n4, n6, n8 correct (1); n5, n7, n9 bug (0),
//   children of n1: n4 n5, of n2: n6 n7, of n3: n8 n9.
GrpoConfig TreeConfig(const std::string& model, const std::string& run_dir) {
  GrpoConfig c;
  c.model = model;
  c.run_dir = run_dir;
  c.train_data = kHumanEval;
  c.train_limit = 1;
  c.prompts_per_step = 1;
  c.group_size = 4;
  c.turns = 2;
  c.turn_group_size = 2;
  c.max_new_tokens = 400;
  c.route_workers = 2;
  c.lr = 1e-3;
  c.steps = 1;
  c.micro_batch = 4;
  c.beta = 0;
  c.shuffle = false;
  c.target = "uniform";
  c.normalization = "mean_centered";
  return c;
}

std::shared_ptr<RolloutSource> TreeSource(const Tokenizer& tok) {
  return std::make_shared<FixedRolloutSource>(
      tok, std::map<std::string, std::vector<std::string>>{
               {"HumanEval/0", {Fence("First try.", kCorrect), Fence("Try:", kBug), Fence("Oops", kSyntax),
                                Fence("Again:", kBug)}},
               {"HumanEval/0#turn2", {Fence("Fixed:", kCorrect), Fence("Still:", kBug)}}});
}

struct TreeRun {
  std::vector<RolloutRecord> records;
  std::vector<RolloutTree> trees;
  Scalars metrics;
};

TreeRun RunTree(const GrpoConfig& c) {
  auto tok = Tokenizer::FromFile(kTokenizerDir);
  EXPECT_TRUE(tok.ok());
  GrpoTrainer::Options options;
  options.progress = false;
  options.rollouts = TreeSource(**tok);
  auto trainer = GrpoTrainer::Create(c, options);
  EXPECT_TRUE(trainer.ok()) << trainer.status().ToString();
  if (!trainer.ok()) return {};
  auto m = (*trainer)->Step();
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return {(*trainer)->last_rollouts(), (*trainer)->last_trees(), m.ok() ? *m : Scalars{}};
}

void ExpectNodes(const TreeRun& run, const std::vector<double>& credited, const std::vector<double>& advantage,
                 const std::vector<double>& weight, const std::vector<bool>& retained) {
  ASSERT_EQ(run.records.size(), 10u);
  for (size_t i = 0; i < run.records.size(); ++i) {
    const RolloutRecord& r = run.records[i];
    EXPECT_EQ(r.node, static_cast<int64_t>(i));
    EXPECT_EQ(r.retained, retained[i]) << "node " << i;
    if (!retained[i]) continue;
    EXPECT_NEAR(r.credited_reward, credited[i], 1e-12) << "node " << i;
    EXPECT_NEAR(r.advantage, advantage[i], 1e-12) << "node " << i;
    EXPECT_NEAR(r.loss_weight, weight[i], 1e-12) << "node " << i;
    // Uniform target: the node's generated tokens carry A_i / T_i each, nothing else does.
    ASSERT_EQ(r.credit.advantages.size(), r.token_ids.size());
    double sum = 0;
    for (double a : r.credit.advantages) sum += a;
    EXPECT_NEAR(sum, r.advantage, 1e-9) << "node " << i;
  }
}

TEST(MultiTurnTree, ScriptedTreeMaRS) {
  testing::ScratchDir dir("mt_mars");
  GrpoConfig c = TreeConfig(testing::MakeTinyQwen3(dir.file("model")), dir.file("run"));
  c.feedback = "level_feedback";
  const TreeRun run = RunTree(c);
  ASSERT_EQ(run.records.size(), 10u);
  const std::vector<double> r = {1, 0, 0, 0, 1, 0, 1, 0, 1, 0};
  const std::vector<int64_t> parent = {-1, -1, -1, -1, 1, 1, 2, 2, 3, 3};
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_DOUBLE_EQ(run.records[i].turn_reward, r[i]) << i << ": " << run.records[i].route.reason;
    EXPECT_EQ(run.records[i].parent_node, parent[i]) << i;
    EXPECT_EQ(run.records[i].turn, i < 4 ? 1 : 2);
  }
  // MaRS: R~ = max(r, max over children) -> every failed turn-1 node backs up to 1, so the
  // root group [1, 1, 1, 1] has no signal; each child group [1, 0] gets +-0.5 (mean-centred).
  ExpectNodes(run, {1, 1, 1, 1, 1, 0, 1, 0, 1, 0}, {0, 0, 0, 0, 0.5, -0.5, 0.5, -0.5, 0.5, -0.5},
              {0.25, 0.25, 0.25, 0.25, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, std::vector<bool>(10, true));
  // Revision prompts: the task, the previous output and the level feedback of the parent.
  const RolloutRecord& parent1 = run.records[1];
  const RolloutRecord& child = run.records[4];
  EXPECT_NE(child.prompt_text.find("has_close_elements"), std::string::npos);
  EXPECT_NE(child.prompt_text.find(parent1.completion), std::string::npos);
  EXPECT_NE(parent1.feedback.find("Passed 0 of 1 tests"), std::string::npos) << parent1.feedback;
  EXPECT_NE(parent1.feedback.find("Test 1:"), std::string::npos) << parent1.feedback;
  EXPECT_NE(child.prompt_text.find(parent1.feedback), std::string::npos);
  EXPECT_NE(child.prompt_text.find(c.revision_instruction), std::string::npos);
  EXPECT_NE(run.records[2].feedback.find("does not compile"), std::string::npos) << run.records[2].feedback;
  EXPECT_TRUE(run.records[0].feedback.empty());  // solved: not expanded
  // The loss sees only generated tokens: the prompt is not part of token_ids.
  auto tok = Tokenizer::FromFile(kTokenizerDir);
  ASSERT_TRUE(tok.ok());
  EncodeOptions no_special;
  no_special.parse_special_tokens = false;
  EXPECT_EQ(child.token_ids, (*tok)->EncodeIds(Fence("Fixed:", kCorrect), no_special));
  EXPECT_EQ(child.prompt_ids, (*tok)->EncodeIds(child.prompt_text));
  // Metrics and the tree dump.
  EXPECT_DOUBLE_EQ(run.metrics.at("tree/generated_turn1"), 4);
  EXPECT_DOUBLE_EQ(run.metrics.at("tree/generated_turn2"), 6);
  EXPECT_DOUBLE_EQ(run.metrics.at("tree/retained"), 10);
  EXPECT_DOUBLE_EQ(run.metrics.at("tree/solved_at_turn1"), 1);
  EXPECT_NEAR(run.metrics.at("tree/reward_before_backup"), 0.4, 1e-12);
  EXPECT_NEAR(run.metrics.at("tree/reward_after_backup"), 0.7, 1e-12);
  ASSERT_EQ(run.trees.size(), 1u);
  EXPECT_TRUE(fs::exists(dir.file("run/trees/step-1.txt")));
  auto json = nlohmann::json::parse(*ReadFile(dir.file("run/trees/step-1.json")));
  ASSERT_EQ(json[0]["nodes"].size(), 10u);
  EXPECT_EQ(json[0]["nodes"][4]["parent"], 1);
}

TEST(MultiTurnTree, ScriptedTreeMeRSAndInterP) {
  testing::ScratchDir dir("mt_mers");
  GrpoConfig c = TreeConfig(testing::MakeTinyQwen3(dir.file("model")), dir.file("run"));
  c.backup = "mers";
  c.backup_gamma = 1.0;
  c.feedback = "egca";
  {
    // MeRS: an unsolved node with children gets (r + gamma * mean_c R~_c) / 2 = 0.25; the root
    // group [1, .25, .25, .25] has mean 0.4375.
    const TreeRun run = RunTree(c);
    ExpectNodes(run, {1, 0.25, 0.25, 0.25, 1, 0, 1, 0, 1, 0},
                {0.5625, -0.1875, -0.1875, -0.1875, 0.5, -0.5, 0.5, -0.5, 0.5, -0.5},
                {0.25, 0.25, 0.25, 0.25, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, std::vector<bool>(10, true));
    // egca feedback names the statement where the execution first goes wrong.
    EXPECT_NE(run.records[1].feedback.find("first goes wrong at line"), std::string::npos) << run.records[1].feedback;
    EXPECT_NE(run.records[1].feedback.find("> threshold"), std::string::npos) << run.records[1].feedback;
  }
  // InterP, budget 2: the three child groups tie on variance (0.25), lower parent id wins,
  // so n3's group (n8, n9) is dropped; n3 is then a leaf keeping r = 0 under MaRS.
  c.backup = "mars";
  c.prune = "inter";
  c.prune_budget = 2;
  c.run_dir = dir.file("run2");
  const TreeRun run = RunTree(c);
  ExpectNodes(run, {1, 1, 1, 0, 1, 0, 1, 0, 0, 0}, {0.25, 0.25, 0.25, -0.75, 0.5, -0.5, 0.5, -0.5, 0, 0},
              {0.25, 0.25, 0.25, 0.25, 0.5, 0.5, 0.5, 0.5, 0, 0},
              {true, true, true, true, true, true, true, true, false, false});
  EXPECT_DOUBLE_EQ(run.metrics.at("tree/retained_turn2"), 4);
}

TEST(MultiTurnTree, ScriptedTreeIntraP) {
  testing::ScratchDir dir("mt_intra");
  GrpoConfig c = TreeConfig(testing::MakeTinyQwen3(dir.file("model")), dir.file("run"));
  // IntraP, budget 2, every group: the root group's (r - mean)^2 with mean 0.25 are
  // [0.5625, 0.0625, 0.0625, 0.0625]: n0 and then n1 (ties: lower position) stay, n2 and n3 go
  // with their children. n1's group [n4 1, n5 0] has 2 members and stays whole. MaRS: n1 -> 1,
  // root group [1, 1] -> 0, 0; child group +-0.5; weights 1/2 each.
  c.prune = "intra";
  c.prune_budget = 2;
  const TreeRun run = RunTree(c);
  ExpectNodes(run, {1, 1, 0, 0, 1, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0.5, -0.5, 0, 0, 0, 0},
              {0.5, 0.5, 0, 0, 0.5, 0.5, 0, 0, 0, 0},
              {true, true, false, false, true, true, false, false, false, false});
  EXPECT_DOUBLE_EQ(run.metrics.at("tree/retained_turn1"), 2);
  EXPECT_DOUBLE_EQ(run.metrics.at("tree/retained_turn2"), 2);
  EXPECT_DOUBLE_EQ(run.metrics.at("tree/generated_turn2"), 6);
}

TEST(MultiTurnTree, TrajectoryBaselines) {
  testing::ScratchDir dir("mt_traj");
  GrpoConfig c = TreeConfig(testing::MakeTinyQwen3(dir.file("model")), dir.file("run"));
  c.feedback = "plain";
  // Trajectories, depth first: [n0] 1, [n1 n4] 1, [n1 n5] 0, [n2 n6] 1, [n2 n7] 0, [n3 n8] 1,
  // [n3 n9] 0: M = 7, mean outcome 4/7.
  // GRPO-MT: success 3/7, failure -4/7; a turn-1 node on two paths sums them: -1/7.
  c.tree_advantage = "grpo_mt";
  {
    const TreeRun run = RunTree(c);
    const double s = 3.0 / 7, f = -4.0 / 7, w = 1.0 / 7;
    ExpectNodes(run, {1, 0, 0, 0, 1, 0, 1, 0, 1, 0}, {s, s + f, s + f, s + f, s, f, s, f, s, f},
                std::vector<double>(10, w), std::vector<bool>(10, true));
    // plain feedback: no execution detail, only the revision instruction.
    EXPECT_TRUE(run.records[1].feedback.empty());
    EXPECT_EQ(run.records[4].prompt_text.find("Passed"), std::string::npos);
  }
  // MT-GRPO (K = 2, alpha = 1): R^I = turn-1 reward [1,0,0,0,0,0,0] (mean 1/7), R^O as above.
  // A^I = [6/7, -1/7 x 6]; A^O = [3/7, 3/7, -4/7, 3/7, -4/7, 3/7, -4/7].
  // Turn 1 of a path: A^I + A^O; turn 2: A^O. n0 = 9/7; n1 = (-1/7 + 3/7) + (-1/7 - 4/7) = -3/7.
  c.tree_advantage = "mt_grpo";
  c.run_dir = dir.file("run2");
  {
    const TreeRun run = RunTree(c);
    const double s = 3.0 / 7, f = -4.0 / 7, w = 1.0 / 7;
    ExpectNodes(run, {1, 0, 0, 0, 1, 0, 1, 0, 1, 0}, {9.0 / 7, -3.0 / 7, -3.0 / 7, -3.0 / 7, s, f, s, f, s, f},
                std::vector<double>(10, w), std::vector<bool>(10, true));
  }
}

TEST(MultiTurnTree, CustomHookWritesTheRevisionPrompt) {
  testing::ScratchDir dir("mt_custom");
  GrpoConfig c = TreeConfig(testing::MakeTinyQwen3(dir.file("model")), dir.file("run"));
  const std::string seen = dir.file("seen.json");
  std::ofstream(dir.file("hook.sh")) << "#!/bin/sh\ncat > " << seen << "\necho 'HOOK: look at the comparison'\n";
  fs::permissions(dir.file("hook.sh"), fs::perms::owner_all);
  c.feedback = "custom";
  c.feedback_command = dir.file("hook.sh");
  const TreeRun run = RunTree(c);
  ASSERT_EQ(run.records.size(), 10u);
  EXPECT_EQ(run.records[3].feedback, "HOOK: look at the comparison");
  EXPECT_NE(run.records[8].prompt_text.find("HOOK: look at the comparison"), std::string::npos);
  // The hook received plain data about the last node it was asked about (n3, a bug).
  auto in = nlohmann::json::parse(*ReadFile(seen));
  EXPECT_EQ(in["turn"], 1);
  EXPECT_EQ(in["mode"], "LOGIC");
  EXPECT_EQ(in["program"], kBug);
  EXPECT_NE(in["execution_feedback"].get<std::string>().find("Passed 0 of 1"), std::string::npos);

  // A failing hook: the node is not expanded, the step goes on.
  std::ofstream(dir.file("bad.sh")) << "#!/bin/sh\ncat >/dev/null\nexit 3\n";
  fs::permissions(dir.file("bad.sh"), fs::perms::owner_all);
  c.feedback_command = dir.file("bad.sh");
  c.run_dir = dir.file("run2");
  const TreeRun bad = RunTree(c);
  ASSERT_EQ(bad.records.size(), 4u);
  EXPECT_DOUBLE_EQ(bad.metrics.at("tree/expansions_skipped"), 3);
}

// reward.kind = reflexicoder (single trajectory, reflection format): every answer graded,
// R = R_overall of the ReflexiCoder reward (its terms are tested by hand in credit/), the
// route and the token-credit spans are the final answer's, in completion bytes.
TEST(ReflexiCoderReward, EveryAnswerGradedFinalAnswerRouted) {
  testing::ScratchDir dir("reflexicoder");
  GrpoConfig c = TreeConfig(testing::MakeTinyQwen3(dir.file("model")), dir.file("run"));
  c.turns = 1;
  c.group_size = 3;
  c.reward = "reflexicoder";
  c.target = "earliest";
  auto answer = [](const std::string& code) { return "<answer>\n```python\n" + code + "```\n</answer>"; };
  const std::string improves = "<think>compare pairs</think>" + answer(kBug) +
                               "<reflection>the comparison is reversed</reflection>" + answer(kCorrect);
  const std::string regresses = "<think>compare pairs</think>" + answer(kCorrect) +
                                "<reflection>maybe the other way</reflection>" + answer(kBug);
  const std::string malformed = "no tags at all\n```python\n" + kCorrect + "```\n";
  auto tok = Tokenizer::FromFile(kTokenizerDir);
  ASSERT_TRUE(tok.ok());
  GrpoTrainer::Options options;
  options.progress = false;
  options.rollouts = std::make_shared<FixedRolloutSource>(
      **tok, std::map<std::string, std::vector<std::string>>{{"HumanEval/0", {improves, regresses, malformed}}});
  auto trainer = GrpoTrainer::Create(c, options);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  ASSERT_TRUE((*trainer)->Step().ok());
  const auto& rs = (*trainer)->last_rollouts();
  ASSERT_EQ(rs.size(), 3u);
  auto up = credit::ComputeReflectionReward(true, {0.0, 1.0});
  auto down = credit::ComputeReflectionReward(true, {1.0, 0.0});
  ASSERT_TRUE(up.ok() && down.ok());
  EXPECT_NEAR(rs[0].reward, up->overall, 1e-12);
  EXPECT_NEAR(rs[1].reward, down->overall, 1e-12);
  EXPECT_GT(rs[0].reward, rs[1].reward);
  EXPECT_DOUBLE_EQ(rs[2].reward, 0.0);  // format gate
  EXPECT_NE(rs[2].reflection_note.find("format"), std::string::npos);
  EXPECT_EQ(rs[0].route.mode, credit::FailureMode::kCorrect);
  EXPECT_EQ(rs[0].program, kCorrect);
  // The regressing trajectory's final answer is LOGIC, localized on its own comparison line.
  ASSERT_EQ(rs[1].route.mode, credit::FailureMode::kLogic);
  ASSERT_TRUE(rs[1].route.earliest_divergence.has_value());
  const auto& span = *rs[1].route.earliest_divergence;
  EXPECT_GT(span.begin_byte, rs[1].completion.find("<reflection>"));
  const size_t b = rs[1].completion.rfind('\n', span.begin_byte) + 1;
  const std::string line = rs[1].completion.substr(b, rs[1].completion.find('\n', span.begin_byte) - b);
  EXPECT_NE(line.find("> threshold"), std::string::npos) << line;
}

TEST(FeedbackHook, ErrorsNameTheCommand) {
  FeedbackHookInput in;
  in.task = "t";
  auto ok = RunFeedbackHook("cat >/dev/null; printf 'fix\\n'", in);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, "fix");
  auto echo = RunFeedbackHook("cat", in);  // echoes its input: the JSON object
  ASSERT_TRUE(echo.ok());
  EXPECT_EQ(nlohmann::json::parse(*echo)["task"], "t");
  auto empty = RunFeedbackHook("cat >/dev/null", in);
  EXPECT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("printed nothing"), std::string::npos);
  auto fail = RunFeedbackHook("exit 4", in);
  EXPECT_FALSE(fail.ok());
  EXPECT_NE(fail.status().message().find("status 4"), std::string::npos);
  auto slow = RunFeedbackHook("sleep 5", in, 0.3);
  EXPECT_FALSE(slow.ok());
  EXPECT_NE(slow.status().message().find("sleep 5"), std::string::npos);
}

// ---- the egca-train binary ---------------------------------------------------------------

std::string WriteConfig(const std::string& path, const std::string& model, const std::string& run_dir,
                        const std::string& multi_turn) {
  std::ofstream(path) << "model: " << model << "\nrun_dir: " << run_dir << "\ndata:\n  train: " << kHumanEval
                      << "\n  train_limit: 2\n  shuffle: false\n"
                      << "rollout:\n  group_size: 2\n  prompts_per_step: 2\n  max_new_tokens: 8\n"
                      << "optim:\n  steps: 2\n  lr: 1e-3\n  micro_batch: 8\n"
                      << "run:\n  save_every: 1\n  keep_checkpoints: 0\n"
                      << "multi_turn:\n  turns: 2\n  group_size: 2\n" << multi_turn;
  return path;
}

// One egca-train run per feedback mode (a test each, so each has its own time limit).
class EgcaTrainMultiTurnCli : public ::testing::TestWithParam<std::string> {};

// A 2-turn, 2-step run with feedback `mode`; returns the run directory ("" on failure).
std::string RunMode(const testing::ScratchDir& dir, const std::string& model, const std::string& mode) {
  std::ofstream(dir.file("hook.sh")) << "#!/bin/sh\ncat >/dev/null\necho 'Revise the loop.'\n";
  fs::permissions(dir.file("hook.sh"), fs::perms::owner_all);
  std::string extra;
  if (mode == "level_feedback") extra = "  sandbox_slice: 0\n";
  if (mode == "egca") extra = "  prune: inter\n  prune_budget: 1\n";
  if (mode == "expert_edits") extra = "  expert_model: " + model + "\n  expert_max_new_tokens: 8\n";
  if (mode == "custom") extra = "  feedback_command: " + dir.file("hook.sh") + "\n  advantage: mt_grpo\n";
  const std::string run = dir.file("run_" + mode);
  const std::string cfg = WriteConfig(dir.file(mode + ".yaml"), model, run, "  feedback: " + mode + "\n" + extra);
  auto r = egca::testing::RunCommand(kTrain + " --config " + cfg + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << mode << ": " << r.out;
  EXPECT_NE(r.out.find("step 2/2"), std::string::npos) << mode << ": " << r.out;
  return r.exit_code == 0 ? run : "";
}

TEST_P(EgcaTrainMultiTurnCli, FeedbackModeTrainsAndDumpsTrees) {
  const std::string mode = GetParam();
  testing::ScratchDir dir("mt_cli_" + mode);
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  const std::string run = RunMode(dir, model, mode);
  ASSERT_FALSE(run.empty());
  {
    for (const char* f : {"trees/step-1.txt", "trees/step-2.json", "rollouts/step-2.jsonl",
                          "checkpoints/step-2/model.safetensors"}) {
      EXPECT_TRUE(fs::exists(run + "/" + f)) << mode << ": " << f;
    }
    std::ifstream in(run + "/metrics.jsonl");
    int lines = 0;
    for (std::string l; std::getline(in, l);) {
      auto j = nlohmann::json::parse(l);
      ++lines;
      EXPECT_DOUBLE_EQ(j["tree/generated_turn1"].get<double>(), 2) << mode;
      EXPECT_TRUE(j.contains("tree/retained_turn2")) << mode;
      EXPECT_TRUE(j.contains("tree/reward_after_backup")) << mode;
      EXPECT_TRUE(j.contains("time/feedback")) << mode;
    }
    EXPECT_EQ(lines, 2) << mode;
    // A random policy fails: every turn-1 node was revised with this mode's feedback.
    std::ifstream roll(run + "/rollouts/step-1.jsonl");
    int revised = 0;
    for (std::string l; std::getline(roll, l);) {
      auto j = nlohmann::json::parse(l);
      if (j["turn"] == 2) {
        ++revised;
        if (mode == "custom") {
          EXPECT_NE(j["prompt"].get<std::string>().find("Revise the loop."), std::string::npos);
        }
        if (mode == "expert_edits") {
          EXPECT_NE(j["prompt"].get<std::string>().find("Suggested edits:"), std::string::npos);
        }
      }
    }
    EXPECT_EQ(revised, 8) << mode;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, EgcaTrainMultiTurnCli,
                         ::testing::Values("plain", "level_feedback", "egca", "expert_edits", "custom"));

TEST(EgcaTrainMultiTurnResume, KilledRunResumesIdentically) {
  testing::ScratchDir dir("mt_cli_resume");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  const std::string reference_run = RunMode(dir, model, "level_feedback");
  ASSERT_FALSE(reference_run.empty());
  // Resume: a 2-step run killed after its step-1 checkpoint and resumed ends with the same
  // weights as the uninterrupted level_feedback run.
  const std::string run_b = dir.file("run_b");
  const std::string cfg_b = WriteConfig(dir.file("b.yaml"), model, run_b, "  feedback: level_feedback\n  sandbox_slice: 0\n");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    execl(kTrain.c_str(), kTrain.c_str(), "--config", cfg_b.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (!fs::exists(run_b + "/checkpoints/step-1/trainer_state.json") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFSIGNALED(status) || fs::exists(run_b + "/checkpoints/step-2")) {
    GTEST_SKIP() << "the run finished before it could be killed";
  }
  auto b = egca::testing::RunCommand(kTrain + " --resume " + run_b + " 2>&1");
  ASSERT_EQ(b.exit_code, 0) << b.out;
  const std::string wa = *ReadFile(reference_run + "/checkpoints/step-2/model.safetensors");
  const std::string wb = *ReadFile(run_b + "/checkpoints/step-2/model.safetensors");
  EXPECT_TRUE(wa == wb) << "resumed weights differ from the uninterrupted run's";
}

}  // namespace
}  // namespace egca::trainer
