// Cooperating agents (MAGRPO-MT) end to end on CPU with the real executor: a scripted tree
// (fixed completions, 2 agents aux + main, 2 turns) whose joint responses, leaf counts,
// returns, advantages, per-agent weights, early termination and per-agent EGCA credit are
// checked against values computed by hand; the custom transition's failures; resume. Then
// the egca-train binary: two tiny agents, 2 HumanEval problems, 2 turns, align and cross,
// every transition once, SIGKILL + resume, and bad configurations.
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

// HumanEval/0 (has_close_elements, one test: r is 0 or 1) split between a helper and main.
const std::string kAuxGood =
    Fence("Helper:", "def aux(a, b, threshold):\n    d = abs(a - b)\n    return d < threshold\n");
const std::string kAuxBug =  // reversed comparison: a LOGIC failure, observed in main
    Fence("Helper:", "def aux(a, b, threshold):\n    d = abs(a - b)\n    return d > threshold\n");
const std::string kAuxSyntax =  // the colon is missing: the error span is aux's
    Fence("Helper:", "def aux(a, b, threshold)\n    d = abs(a - b)\n    return d < threshold\n");
const std::string kMain = Fence("Main:",
                                "def has_close_elements(numbers, threshold):\n"
                                "    for i in range(len(numbers)):\n"
                                "        for j in range(i + 1, len(numbers)):\n"
                                "            if aux(numbers[i], numbers[j], threshold):\n"
                                "                return True\n"
                                "    return False\n");
// HumanEval/1 (separate_paren_groups): both agents fail.
const std::string kAux1 = Fence("", "def aux(s):\n    return s\n");
const std::string kMain1 = Fence("", "def separate_paren_groups(paren_string):\n    return []\n");

std::shared_ptr<RolloutSource> Source(const Tokenizer& tok,
                                      const std::string& aux_bad = kAuxSyntax) {
  return std::make_shared<FixedRolloutSource>(
      tok, std::map<std::string, std::vector<std::string>>{{"HumanEval/0@aux", {kAuxGood, aux_bad}},
                                                           {"HumanEval/0@main", {kMain}},
                                                           {"HumanEval/0@aux#turn2", {kAuxGood}},
                                                           {"HumanEval/0@main#turn2", {kMain}},
                                                           {"HumanEval/1@aux", {kAux1}},
                                                           {"HumanEval/1@main", {kMain1}}});
}

GrpoConfig Config(const std::string& model, const std::string& run_dir, const std::string& mode) {
  GrpoConfig c;
  c.target = "earliest";  // these tests check the localized credit (the default is uniform)
  c.run_dir = run_dir;
  c.train_data = kHumanEval;
  c.train_limit = 1;
  c.prompts_per_step = 1;
  c.shuffle = false;
  c.group_size = 2;
  c.turns = 2;
  c.max_new_tokens = 400;
  c.route_workers = 2;
  c.lr = 1e-3;
  c.steps = 1;
  c.micro_batch = 4;
  c.beta = 0;
  c.feedback = "level_feedback";
  c.ma_agents = "[{name: aux, model: " + model + "}, {name: main, model: " + model + "}]";
  c.ma_joint_mode = mode;
  c.ma_gamma = 0.5;
  return c;
}

struct StepRun {
  std::unique_ptr<MultiAgentTrainer> trainer;
  Scalars metrics;
};

StepRun Step(const GrpoConfig& c, const std::string& aux_bad = kAuxSyntax) {
  auto tok = Tokenizer::FromFile(kTokenizerDir);
  EXPECT_TRUE(tok.ok());
  MultiAgentTrainer::Options o;
  o.progress = false;
  o.overwrite = true;
  o.rollouts = Source(**tok, aux_bad);
  auto t = MultiAgentTrainer::Create(c, o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return {};
  auto m = (*t)->Step();
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return {std::move(*t), m.ok() ? *m : Scalars{}};
}

std::vector<at::Tensor> Params(DecoderModel& m) {
  std::vector<at::Tensor> out;
  for (const auto& p : m.parameters()) out.push_back(p.detach().clone());
  return out;
}
bool SameParams(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!at::equal(a[i], b[i])) return false;
  }
  return true;
}

// Each agent's samples: its own prompt, its own tokens only, A spread as the credit says.
void ExpectOwnTokens(MultiAgentTrainer& t) {
  for (int64_t a = 0; a < 2; ++a) {
    const std::string own =
        a == 0 ? "helper function named `aux`" : "A helper function `aux` is already defined";
    for (const RolloutRecord& r : t.last_records(a)) {
      EXPECT_NE(r.prompt_text.find(own), std::string::npos) << a;
      ASSERT_EQ(r.credit.advantages.size(), r.token_ids.size());
      ASSERT_FALSE(r.token_ids.empty());
      EXPECT_EQ(r.token_bytes.back().end, r.completion.size());
    }
  }
}

TEST(MultiAgentTree, AlignScriptedTree) {
  testing::ScratchDir dir("ma_align");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  GrpoConfig c = Config(model, dir.file("run"), "align");
  const auto before_main = [&] {
    auto m = LoadCheckpoint(model, LoadOptions(at::kCPU));
    return Params(**m);
  }();
  StepRun run = Step(c);
  ASSERT_TRUE(run.trainer);
  MultiAgentTrainer& t = *run.trainer;
  // Joint responses: turn 1 n0 = (good, main) r 1, n1 = (syntax, main) r 0 (SYNTAX); turn 2:
  // n2, n3 from n0 and n4, n5 from n1, all (good, main) r 1. G^T = 4 leaves.
  const auto& joint = t.last_joint();
  ASSERT_EQ(joint.size(), 6u);
  const std::vector<double> r = {1, 0, 1, 1, 1, 1};
  const std::vector<int> parent = {-1, -1, 0, 0, 1, 1};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(joint[i].node, static_cast<int>(i));
    EXPECT_EQ(joint[i].parent, parent[i]);
    EXPECT_DOUBLE_EQ(joint[i].reward, r[i])
        << i << " " << joint[i].route.reason << joint[i].route_error;
    EXPECT_EQ(joint[i].samples[0], static_cast<int64_t>(i));  // align: sample j of each agent
    EXPECT_EQ(joint[i].samples[1], static_cast<int64_t>(i));
  }
  EXPECT_NE(joint[0].code.find("from typing import List\n\ndef aux(a, b, threshold):"),
            std::string::npos)
      << joint[0].code;
  EXPECT_EQ(joint[1].route.mode, credit::FailureMode::kSyntax);
  EXPECT_EQ(joint[1].blamed_agent, 0) << "the missing colon is aux's";
  EXPECT_DOUBLE_EQ(run.metrics["joint/leaves"], 4);
  EXPECT_DOUBLE_EQ(run.metrics["joint/responses"], 6);
  EXPECT_DOUBLE_EQ(run.metrics["joint/pass_rate_turn1"], 0.5);
  EXPECT_DOUBLE_EQ(run.metrics["blame/aux"], 1.0);
  // Returns (gamma 0.5): n0 = 1 + 0.5 * 1 = 1.5, n1 = 0 + 0.5 * 1 = 0.5; turn-1 advantages
  // +-0.5, turn-2 groups all equal: 0. Weights 1 / G.
  const auto& tree = t.last_trees()[0];
  EXPECT_DOUBLE_EQ(tree.nodes[0].ret, 1.5);
  EXPECT_DOUBLE_EQ(tree.nodes[1].ret, 0.5);
  for (int64_t a = 0; a < 2; ++a) {
    const auto& rec = t.last_records(a);
    ASSERT_EQ(rec.size(), 6u);
    const std::vector<double> adv = {0.5, -0.5, 0, 0, 0, 0};
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_DOUBLE_EQ(rec[i].advantage, adv[i]) << a << " " << i;
      EXPECT_DOUBLE_EQ(rec[i].loss_weight, 0.5);
    }
  }
  // Per-agent EGCA credit: aux's failing completion carries the localized advantage on its
  // span (the syntax error, inside its code), main's failing completion is uniform.
  const RolloutRecord& aux_bad = t.last_records(0)[1];
  EXPECT_EQ(t.last_sample_info(0)[1].blame, "self");
  EXPECT_EQ(aux_bad.credit.placement, credit::CreditPlacement::kLocalized);
  ASSERT_TRUE(aux_bad.route.error_span);
  const std::string in_aux = aux_bad.completion.substr(
      aux_bad.route.error_span->begin_byte,
      aux_bad.route.error_span->end_byte - aux_bad.route.error_span->begin_byte);
  EXPECT_NE(kAuxSyntax.find(in_aux), std::string::npos) << in_aux;
  double sum = 0, off_span = 0;
  for (size_t k = 0; k < aux_bad.credit.advantages.size(); ++k) {
    sum += aux_bad.credit.advantages[k];
    const bool on = k >= aux_bad.credit.span_token_begin &&
                    k < aux_bad.credit.span_token_begin + aux_bad.credit.span_token_count;
    if (!on) off_span += std::abs(aux_bad.credit.advantages[k]);
  }
  EXPECT_NEAR(sum, -0.5, 1e-9);
  EXPECT_EQ(off_span, 0.0);
  const RolloutRecord& main_bad = t.last_records(1)[1];
  EXPECT_EQ(t.last_sample_info(1)[1].blame, "other");
  EXPECT_EQ(main_bad.credit.placement, credit::CreditPlacement::kUniform);
  const double per = -0.5 / static_cast<double>(main_bad.token_ids.size());
  for (double a : main_bad.credit.advantages) EXPECT_NEAR(a, per, 1e-12);
  ExpectOwnTokens(t);
  // Both agents' weights moved (nonzero advantages), from the same starting checkpoint.
  EXPECT_FALSE(SameParams(Params(t.policy(0)), before_main));
  EXPECT_FALSE(SameParams(Params(t.policy(1)), before_main));
}

TEST(MultiAgentTree, OtherCreditNoneGivesTheOtherAgentNothing) {
  testing::ScratchDir dir("ma_none");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  GrpoConfig c = Config(model, dir.file("run"), "align");
  c.turns = 1;
  // other_credit = none: main's failing completion gets nothing.
  c.ma_other_credit = "none";
  StepRun none_run = Step(c);
  ASSERT_TRUE(none_run.trainer);
  for (double a : none_run.trainer->last_records(1)[1].credit.advantages) EXPECT_EQ(a, 0.0);
  EXPECT_EQ(none_run.trainer->last_records(0)[1].credit.placement,
            credit::CreditPlacement::kLocalized);
}

// A helper's wrong value (LOGIC): egca's divergence engine aligns the candidate's frames with
// the reference's, and HumanEval's reference has no helper, so aux's frame is a gap and the
// wrong value becomes observable where main uses it. Whatever agent's bytes hold the span,
// that agent's tokens get the localized advantage and the other's the fallback.
TEST(MultiAgentTree, LogicDivergenceIsCreditedToTheAgentWhoseBytesHoldIt) {
  testing::ScratchDir dir("ma_logic");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  GrpoConfig c = Config(model, dir.file("run"), "align");
  c.turns = 1;
  StepRun run = Step(c, kAuxBug);
  ASSERT_TRUE(run.trainer);
  MultiAgentTrainer& t = *run.trainer;
  const JointRecord& jr = t.last_joint()[1];
  ASSERT_EQ(jr.route.mode, credit::FailureMode::kLogic) << jr.route.reason;
  ASSERT_TRUE(jr.route.earliest_divergence);
  datasets::DatasetOptions dopt;
  dopt.limit = 1;
  datasets::LoadReport report;
  auto problems = datasets::LoadProblems(kHumanEval, dopt, &report);
  ASSERT_TRUE(problems.ok());
  const JointProgram jp =
      BuildJointProgram((*problems)[0], {{"aux"}, {"has_close_elements"}},
                        {t.last_records(0)[1].completion, t.last_records(1)[1].completion});
  EXPECT_EQ(jp.code, jr.code);
  const int owner = AgentOfByte(jp, jr.route.earliest_divergence->begin_byte);
  EXPECT_EQ(jr.blamed_agent, owner);
  ASSERT_GE(owner, 0);
  const RolloutRecord& blamed = t.last_records(owner)[1];
  const RolloutRecord& other = t.last_records(1 - owner)[1];
  EXPECT_EQ(t.last_sample_info(owner)[1].blame, "self");
  EXPECT_EQ(blamed.credit.placement, credit::CreditPlacement::kLocalized);
  ASSERT_TRUE(blamed.route.earliest_divergence);
  const std::string text = blamed.completion.substr(
      blamed.route.earliest_divergence->begin_byte,
      blamed.route.earliest_divergence->end_byte - blamed.route.earliest_divergence->begin_byte);
  EXPECT_NE(jr.code.find(text), std::string::npos) << text;
  EXPECT_EQ(t.last_sample_info(1 - owner)[1].blame, "other");
  EXPECT_EQ(other.credit.placement, credit::CreditPlacement::kUniform);
  std::fprintf(stderr,
               "LOGIC divergence of a reversed comparison in aux: blamed agent %d, span '%s'\n",
               owner, text.c_str());
}

TEST(MultiAgentTree, CrossScriptedTree) {
  testing::ScratchDir dir("ma_cross");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  GrpoConfig c = Config(model, dir.file("run"), "cross");
  const auto before = [&] {
    auto m = LoadCheckpoint(model, LoadOptions(at::kCPU));
    return Params(**m);
  }();
  StepRun run = Step(c);
  ASSERT_TRUE(run.trainer);
  MultiAgentTrainer& t = *run.trainer;
  // Turn 1: (0,0) 1, (0,1) 1, (1,0) 0, (1,1) 0; each expanded into 4: G^(N*T) = 16 leaves.
  const auto& joint = t.last_joint();
  ASSERT_EQ(joint.size(), 20u);
  EXPECT_EQ(joint[1].samples, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(joint[2].samples, (std::vector<int64_t>{1, 0}));
  const std::vector<double> r = {1, 1, 0, 0};
  for (size_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(joint[i].reward, r[i]) << i;
  for (size_t i = 4; i < 20; ++i) {
    EXPECT_DOUBLE_EQ(joint[i].reward, 1) << i;
    EXPECT_EQ(joint[i].turn, 2);
  }
  EXPECT_DOUBLE_EQ(run.metrics["joint/leaves"], 16);
  // Returns: 1.5, 1.5, 0.5, 0.5. aux's completion 0 is in (0,0), (0,1): 1.5; 1: 0.5 ->
  // A = +-0.5. main's completion 0 is in (0,0), (1,0): 1; 1: 1 -> A = 0.
  const auto& aux = t.last_records(0);
  const auto& main = t.last_records(1);
  ASSERT_EQ(aux.size(), 2u + 4 * 2);
  EXPECT_DOUBLE_EQ(aux[0].credited_reward, 1.5);
  EXPECT_DOUBLE_EQ(aux[0].advantage, 0.5);
  EXPECT_DOUBLE_EQ(aux[1].advantage, -0.5);
  EXPECT_DOUBLE_EQ(main[0].credited_reward, 1.0);
  EXPECT_DOUBLE_EQ(main[0].advantage, 0.0);
  EXPECT_DOUBLE_EQ(main[1].advantage, 0.0);
  ExpectOwnTokens(t);
  // Only aux had a signal: aux moved, main (beta = 0, every advantage 0) did not.
  EXPECT_FALSE(SameParams(Params(t.policy(0)), before));
  EXPECT_TRUE(SameParams(Params(t.policy(1)), before));
}

TEST(MultiAgentTree, EarlyTerminationStopsExactlyTheNodesItShould) {
  testing::ScratchDir dir("ma_early");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  GrpoConfig c = Config(model, dir.file("run"), "align");
  c.train_limit = 2;
  c.prompts_per_step = 2;
  // HumanEval/0's turn-1 joint responses average 0.5 (stop at 0.5); HumanEval/1's 0 (go on).
  c.ma_early_termination = 0.5;
  StepRun run = Step(c);
  ASSERT_TRUE(run.trainer);
  int he0_turn2 = 0, he1_turn2 = 0;
  for (const JointRecord& jr : run.trainer->last_joint()) {
    if (jr.turn == 1 && jr.problem_id == "HumanEval/0") {
      EXPECT_FALSE(jr.expanded);
      EXPECT_NE(jr.not_expanded.find("early termination"), std::string::npos) << jr.not_expanded;
    }
    if (jr.turn == 1 && jr.problem_id == "HumanEval/1") {
      EXPECT_TRUE(jr.expanded);
    }
    if (jr.turn == 2) ++(jr.problem_id == "HumanEval/0" ? he0_turn2 : he1_turn2);
  }
  EXPECT_EQ(he0_turn2, 0);
  EXPECT_EQ(he1_turn2, 4);
  EXPECT_DOUBLE_EQ(run.metrics["joint/leaves"], (2.0 + 4.0) / 2);  // per tree
  EXPECT_DOUBLE_EQ(run.metrics["joint/early_terminated"], 1.0);    // 2 nodes over 2 trees
  // Just above the mean: both expand.
  c.ma_early_termination = 0.51;
  c.run_dir = dir.file("run2");
  StepRun more = Step(c);
  ASSERT_TRUE(more.trainer);
  EXPECT_DOUBLE_EQ(more.metrics["joint/leaves"], 4.0);
}

// The custom transition: the paper's interface on stdin, one prompt per agent out.
TEST(MultiAgentTree, CustomTransitionGetsThePaperInterface) {
  testing::ScratchDir dir("ma_hook");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  const std::string seen = dir.file("seen.json");
  std::ofstream(dir.file("good.sh"))
      << "#!/bin/sh\ncat > " << seen << "\necho '[\"HOOK for aux\", \"HOOK for main\"]'\n";
  fs::permissions(dir.file("good.sh"), fs::perms::owner_all);
  GrpoConfig c = Config(model, dir.file("run"), "align");
  c.feedback = "custom";
  c.feedback_command = dir.file("good.sh");
  StepRun run = Step(c);
  ASSERT_TRUE(run.trainer);
  EXPECT_DOUBLE_EQ(run.metrics["joint/leaves"], 4);
  const auto in = nlohmann::json::parse(ReadFile(seen).value());  // the last node's input
  EXPECT_EQ(in["num_agents"], 2);
  EXPECT_EQ(in["agent_names"], (nlohmann::json{"aux", "main"}));
  EXPECT_EQ(in["agent_completions"][0], kAuxSyntax);
  EXPECT_EQ(in["response_history_per_agent"][1][0], kMain);
  EXPECT_EQ(in["mode"], "SYNTAX");
  EXPECT_NE(in["prompt"].get<std::string>().find("has_close_elements"), std::string::npos);
  for (int64_t a = 0; a < 2; ++a) {
    const RolloutRecord& r2 = run.trainer->last_records(a)[2];
    EXPECT_EQ(r2.turn, 2);
    EXPECT_NE(r2.prompt_text.find(a == 0 ? "HOOK for aux" : "HOOK for main"), std::string::npos);
    EXPECT_NE(r2.prompt_text.find(a == 0 ? kAuxGood : kMain),
              std::string::npos);  // its own history
  }
}

// A failing custom transition leaves the node unexpanded, with the reason logged and dumped.
struct HookCase {
  std::string name, script, expect;
  double timeout;
};
class CustomTransitionFailure : public ::testing::TestWithParam<HookCase> {};

TEST_P(CustomTransitionFailure, LeavesTheNodeUnexpanded) {
  const HookCase& k = GetParam();
  testing::ScratchDir dir("ma_hook_" + k.name);
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  std::ofstream(dir.file("hook.sh")) << "#!/bin/sh\n" << k.script << "\n";
  fs::permissions(dir.file("hook.sh"), fs::perms::owner_all);
  GrpoConfig c = Config(model, dir.file("run"), "align");
  c.feedback = "custom";
  c.feedback_command = dir.file("hook.sh");
  c.ma_transition_timeout = k.timeout;
  StepRun run = Step(c);
  ASSERT_TRUE(run.trainer);
  EXPECT_DOUBLE_EQ(run.metrics["joint/leaves"], 2);
  EXPECT_DOUBLE_EQ(run.metrics["joint/expansions_skipped"], 2);
  for (const JointRecord& jr : run.trainer->last_joint()) {
    EXPECT_FALSE(jr.expanded);
    EXPECT_NE(jr.not_expanded.find(k.expect), std::string::npos) << jr.not_expanded;
  }
  const auto trees = nlohmann::json::parse(ReadFile(c.run_dir + "/trees/step-1.json").value());
  EXPECT_NE(trees[0]["not_expanded"].get<std::string>().find(k.expect), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Hooks, CustomTransitionFailure,
    ::testing::Values(HookCase{"exit", "cat >/dev/null\nexit 3", "status 3", 60},
                      HookCase{"timeout", "sleep 30", "no answer within", 0.5},
                      HookCase{"count", "cat >/dev/null\necho '[\"only one\"]'",
                               "1 prompts for 2 agents", 60},
                      HookCase{"flood", "cat >/dev/null\nhead -c 3000000 /dev/zero | tr '\\000' x",
                               "more than 1 MiB", 60}),
    [](const auto& info) { return info.param.name; });

TEST(MultiAgentTree, ResumeGivesTheUninterruptedWeights) {
  testing::ScratchDir dir("ma_resume");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  auto tok = Tokenizer::FromFile(kTokenizerDir);
  ASSERT_TRUE(tok.ok());
  GrpoConfig c = Config(model, dir.file("run_a"), "align");
  c.turns = 1;  // 4 steps in all: one turn keeps the test short on a loaded machine
  c.steps = 2;
  c.save_every = 1;
  MultiAgentTrainer::Options o;
  o.progress = false;
  o.rollouts = Source(**tok);
  auto a = MultiAgentTrainer::Create(c, o);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE((*a)->Train().ok());
  // B: one step, then a new process state resumes it to step 2.
  GrpoConfig cb = c;
  cb.run_dir = dir.file("run_b");
  cb.steps = 1;
  {
    auto b1 = MultiAgentTrainer::Create(cb, o);
    ASSERT_TRUE(b1.ok());
    ASSERT_TRUE((*b1)->Train().ok());
  }
  cb.steps = 2;
  o.resume = true;
  auto b2 = MultiAgentTrainer::Create(cb, o);
  ASSERT_TRUE(b2.ok()) << b2.status().ToString();
  EXPECT_EQ((*b2)->step(), 1);
  ASSERT_TRUE((*b2)->Train().ok());
  for (int64_t k = 0; k < 2; ++k) {
    EXPECT_TRUE(SameParams(Params((*a)->policy(k)), Params((*b2)->policy(k)))) << "agent " << k;
    const std::string name = k == 0 ? "aux" : "main";
    for (const char* f :
         {"model.safetensors", "optimizer.pt", "trainer_state.json", "tokenizer.json"}) {
      EXPECT_TRUE(fs::exists(dir.file("run_b/agents/" + name + "/checkpoints/step-2/" + f))) << f;
    }
  }
  // The two agents trained apart: same start, different data, different weights.
  EXPECT_FALSE(SameParams(Params((*a)->policy(0)), Params((*a)->policy(1))));
}

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

TEST(EgcaTrainMultiAgentCli, BadConfigurationsAreOneLineExit2) {
  testing::ScratchDir dir("ma_cli_bad");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  const std::string run = dir.file("run");
  const std::string good =
      WriteConfig(dir.file("good.yaml"), model, run, "multi_turn:\n  turns: 2\n");
  std::ofstream(dir.file("one.yaml"))
      << "run_dir: " << run << "\ndata:\n  train: " << kHumanEval
      << "\nmulti_agent:\n  agents: [{name: solo, model: " << model << "}]\n";
  std::ofstream(dir.file("dup.yaml")) << "run_dir: " << run << "\ndata:\n  train: " << kHumanEval
                                      << "\nmulti_agent:\n  agents: [{name: a, model: " << model
                                      << "}, {name: a, model: " << model << "}]\n";
  std::ofstream(dir.file("nomodel.yaml"))
      << "run_dir: " << run << "\ndata:\n  train: " << kHumanEval
      << "\nmulti_agent:\n  agents: [{name: aux}, {name: main, model: " << model << "}]\n";
  struct Case {
    std::string name, args, expect;
  };
  const std::vector<Case> cases = {
      {"N = 1", "--config " + dir.file("one.yaml"), "needs at least 2"},
      {"unknown joint mode", "--config " + good + " --set multi_agent.joint_mode=diagonal",
       "multi_agent.joint_mode"},
      {"missing agent model key", "--config " + dir.file("nomodel.yaml"),
       "agent 'aux': 'model' is required"},
      {"agent model not there",
       "--config " + good + " --set 'multi_agent.agents=[{name: aux, model: " + dir.file("nope") +
           "}, {name: main, model: " + model + "}]'",
       "nope"},
      {"duplicate names", "--config " + dir.file("dup.yaml"), "'a' appears twice"},
      {"cross over budget",
       "--config " + good + " --set multi_agent.joint_mode=cross --set multi_agent.max_nodes=19",
       "over the budget of 19"},
  };
  for (const Case& k : cases) {
    auto r = egca::testing::RunCommand(kTrain + " " + k.args + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << k.name << ": " << r.out;
    EXPECT_NE(r.out.find(k.expect), std::string::npos) << k.name << ": " << r.out;
    std::string text = r.out;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    EXPECT_EQ(text.find('\n'), std::string::npos) << k.name << ": " << r.out;
    EXPECT_FALSE(fs::exists(run)) << k.name;
  }
}

}  // namespace
}  // namespace egca::trainer
