// GrpoTrainer end to end on CPU: a tiny random Qwen3-shaped checkpoint with Qwen3's real
// tokenizer, 2 HumanEval problems, G = 4. One part feeds fixed, realistic completions (a
// random model writes no code) through the real sandbox and router to check routing,
// group advantages and token credit; the other drives the egca-train binary: metrics,
// TensorBoard, checkpoints, the rollout dump, resume after SIGKILL, bad input.
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
#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/rl/grpo_trainer.h"
#include "cli_test_util.h"
#include "model_test_util.h"

namespace egca::trainer {
namespace {

namespace fs = std::filesystem;

const std::string kTokenizerDir = testing::kQwen3TokenizerDir;
const std::string kHumanEval = EGCA_DATA_DIR "/humaneval/HumanEval.jsonl.gz";
const std::string kTrain = EGCA_BINARY_DIR "/tools/egca-train/egca-train";

GrpoConfig BaseConfig(const std::string& model, const std::string& run_dir) {
  GrpoConfig c;
  c.target = "earliest";  // these tests check the localized credit (the default is uniform)
  c.model = model;
  c.run_dir = run_dir;
  c.train_data = kHumanEval;
  c.train_limit = 2;
  c.group_size = 4;
  c.prompts_per_step = 2;
  c.max_new_tokens = 12;
  c.route_workers = 2;
  c.lr = 1e-3;
  c.steps = 2;
  c.micro_batch = 3;
  c.shuffle = false;
  return c;
}

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
const std::string kHasCloseBug =  // the comparison is reversed
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

TEST(GrpoTrainerE2E, FixedCompletionsRouteCreditAndUpdate) {
  testing::ScratchDir dir("grpo_fixed");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  auto tok = Tokenizer::FromFile(kTokenizerDir);
  ASSERT_TRUE(tok.ok());
  GrpoConfig c = BaseConfig(model, dir.file("run"));
  c.max_new_tokens = 400;
  c.beta = 0.05;
  std::map<std::string, std::vector<std::string>> texts = {
      {"HumanEval/0", {Fence("Here is the solution.", kHasCloseCorrect), Fence("Try this:", kHasCloseBug),
                       Fence("Oops", "def has_close_elements(numbers, threshold)\n    return False\n"),
                       Fence("Another attempt:", kHasCloseBug)}},
      {"HumanEval/1", {Fence("Solution:", kParenCorrect), Fence("Solution:", kParenBug),
                       Fence("Solution:", kParenBug), Fence("Solution:", kParenCorrect)}},
  };
  GrpoTrainer::Options options;
  options.progress = false;
  options.rollouts = std::make_shared<FixedRolloutSource>(**tok, texts);
  auto trainer = GrpoTrainer::Create(c, options);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  std::vector<at::Tensor> before;
  for (auto& p : (*trainer)->policy().parameters()) before.push_back(p.detach().clone());

  auto m = (*trainer)->Step();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const auto& rs = (*trainer)->last_rollouts();
  ASSERT_EQ(rs.size(), 8u);
  using credit::FailureMode;
  const std::vector<FailureMode> want = {FailureMode::kCorrect, FailureMode::kLogic, FailureMode::kSyntax,
                                         FailureMode::kLogic,   FailureMode::kCorrect, FailureMode::kLogic,
                                         FailureMode::kLogic,   FailureMode::kCorrect};
  for (size_t i = 0; i < rs.size(); ++i) {
    ASSERT_TRUE(rs[i].route_error.empty()) << rs[i].route_error;
    EXPECT_EQ(rs[i].route.mode, want[i]) << i << ": " << rs[i].route.reason;
    // EGCA eq. 6: the token advantages of every sample sum to its A_i.
    double sum = 0;
    for (double a : rs[i].credit.advantages) sum += a;
    EXPECT_NEAR(sum, rs[i].advantage, 1e-9) << i;
    EXPECT_EQ(rs[i].credit.advantages.size(), rs[i].token_ids.size());
  }
  // Mean-centred group advantages (EGCA eq. 2): A_i = R_i - mean R.
  for (int grp = 0; grp < 2; ++grp) {
    double mean = 0;
    for (int s = 0; s < 4; ++s) mean += rs[grp * 4 + s].reward / 4;
    for (int s = 0; s < 4; ++s) EXPECT_NEAR(rs[grp * 4 + s].advantage, rs[grp * 4 + s].reward - mean, 1e-12);
  }
  EXPECT_DOUBLE_EQ(rs[0].reward, 1.0);
  EXPECT_DOUBLE_EQ(rs[2].reward, 0.0);
  // The reversed comparison is localized on its own line, in completion bytes.
  const RolloutRecord& logic = rs[1];
  ASSERT_TRUE(logic.route.earliest_divergence.has_value()) << logic.route.localization_note;
  EXPECT_EQ(logic.credit.placement, credit::CreditPlacement::kLocalized);
  const auto& span = *logic.route.earliest_divergence;
  const size_t line_begin = logic.completion.rfind('\n', span.begin_byte) + 1;
  const size_t line_end = logic.completion.find('\n', span.begin_byte);
  const std::string line = logic.completion.substr(line_begin, line_end - line_begin);
  EXPECT_NE(line.find("> threshold"), std::string::npos) << "localized line: " << line;
  // Tokens outside the span carry nothing (hard mask); the prose before the fence is never credited.
  for (size_t t = 0; t < logic.token_bytes.size(); ++t) {
    if (logic.token_bytes[t].end <= span.begin_byte || logic.token_bytes[t].begin >= span.end_byte) {
      EXPECT_EQ(logic.credit.advantages[t], 0.0) << t;
    }
  }
  // The syntax error is localized too (SYNTAX: the interpreter's span).
  EXPECT_EQ(rs[2].credit.placement, credit::CreditPlacement::kLocalized);

  EXPECT_NEAR((*m)["mode/correct"], 3.0 / 8, 1e-12);
  EXPECT_NEAR((*m)["mode/logic"], 4.0 / 8, 1e-12);
  EXPECT_NEAR((*m)["mode/syntax"], 1.0 / 8, 1e-12);
  EXPECT_NEAR((*m)["localization/trigger_rate"], 1.0, 1e-12);
  EXPECT_GT((*m)["credit/span_fraction"], 0.0);
  EXPECT_LT((*m)["credit/span_fraction"], 0.5);
  EXPECT_NEAR((*m)["kl"], 0.0, 1e-6);  // the policy is still the reference before the update
  bool changed = false;
  auto params = (*trainer)->policy().parameters();
  for (size_t i = 0; i < params.size(); ++i) changed = changed || !at::equal(params[i], before[i]);
  EXPECT_TRUE(changed);

  // The dump shows every sample with its spans and per-token advantages.
  std::ifstream dump(dir.file("run/rollouts/step-1.jsonl"));
  std::vector<nlohmann::json> lines;
  for (std::string l; std::getline(dump, l);) lines.push_back(nlohmann::json::parse(l));
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[1]["mode"], "LOGIC");
  EXPECT_FALSE(lines[1]["spans"]["earliest"].is_null());
  EXPECT_EQ(lines[1]["tokens"].size(), logic.token_ids.size());
  EXPECT_EQ(lines[1]["program"], kHasCloseBug);

  // Second step: the policy moved, so KL to the reference is positive.
  auto m2 = (*trainer)->Step();
  ASSERT_TRUE(m2.ok()) << m2.status().ToString();
  EXPECT_GT((*m2)["kl"], 0.0);
}

// Issue 23: dynamic sampling drops HumanEval/0's group (every sample correct: rewards all
// equal) and refills the batch with the next problem of the refill order (HumanEval/2, the
// only one left of 3); the step logs the refill, the update's KL, the gradient norm before
// clipping, the entropy at divergent tokens and the cancellation diagnostic.
TEST(GrpoTrainerE2E, DynamicSamplingRefillsAndNewMetricsAreLogged) {
  testing::ScratchDir dir("grpo_dynamic");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  auto tok = Tokenizer::FromFile(kTokenizerDir);
  ASSERT_TRUE(tok.ok());
  GrpoConfig c = BaseConfig(model, dir.file("run"));
  c.train_limit = 3;
  c.max_new_tokens = 400;
  c.beta = 0;
  c.dynamic_sampling = true;
  c.max_extra_prompts = 4;
  c.grad_clip = 1e-6;  // clipped: the logged norm is the one before clipping
  c.loss_normalization = "token";
  const std::string trunc = "def truncate_number(number: float) -> float:\n    return number % 1.0\n";
  const std::string trunc_bug = "def truncate_number(number: float) -> float:\n    return number // 1.0\n";
  std::map<std::string, std::vector<std::string>> texts = {
      {"HumanEval/0", {Fence("A", kHasCloseCorrect), Fence("B", kHasCloseCorrect)}},
      {"HumanEval/1", {Fence("Solution:", kParenCorrect), Fence("Solution:", kParenBug)}},
      {"HumanEval/2", {Fence("Here:", trunc), Fence("Here:", trunc_bug)}},
  };
  GrpoTrainer::Options options;
  options.progress = false;
  options.rollouts = std::make_shared<FixedRolloutSource>(**tok, texts);
  auto trainer = GrpoTrainer::Create(c, options);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  auto m = (*trainer)->Step();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const auto& rs = (*trainer)->last_rollouts();
  ASSERT_EQ(rs.size(), 8u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(rs[i].problem_id, "HumanEval/1") << i;
  for (size_t i = 4; i < 8; ++i) EXPECT_EQ(rs[i].problem_id, "HumanEval/2") << i;
  EXPECT_EQ(rs[5].route.mode, credit::FailureMode::kLogic) << rs[5].route.reason;
  EXPECT_EQ((*m)["dynamic_sampling/sampled_groups"], 3);
  EXPECT_EQ((*m)["dynamic_sampling/skipped_groups"], 1);
  EXPECT_EQ((*m)["dynamic_sampling/extra_prompts"], 1);
  EXPECT_EQ((*m)["dynamic_sampling/refill_rounds"], 1);
  EXPECT_EQ((*m)["dynamic_sampling/kept_groups"], 2);
  EXPECT_EQ((*m)["dynamic_sampling/cap_reached"], 0);
  EXPECT_EQ((*m)["frac_reward_zero_std"], 0);
  EXPECT_GT((*m)["grad_norm"], 1e-5);
  EXPECT_GT((*m)["update/kl"], 0.0);
  EXPECT_GT((*m)["divergent_tokens"], 0.0);
  EXPECT_GT((*m)["entropy/divergent_tokens"], 0.0);
  EXPECT_GT((*m)["cancellation/divergent_share"], 0.0);
  EXPECT_LE((*m)["cancellation/divergent_share"], 1.0);
  EXPECT_GT((*m)["cancellation/divergent_token_share"], 0.0);
  EXPECT_LT((*m)["cancellation/divergent_token_share"], 0.5);
  // The metrics file has them too.
  std::ifstream jsonl(dir.file("run/metrics.jsonl"));
  std::string line;
  ASSERT_TRUE(std::getline(jsonl, line));
  const auto j = nlohmann::json::parse(line);
  EXPECT_TRUE(j.contains("update/kl")) << line;
  EXPECT_TRUE(j.contains("cancellation/divergent_share")) << line;
}

TEST(GrpoTrainerE2E, UniformTargetSpreadsEveryAdvantage) {
  testing::ScratchDir dir("grpo_uniform");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  auto tok = Tokenizer::FromFile(kTokenizerDir);
  ASSERT_TRUE(tok.ok());
  GrpoConfig c = BaseConfig(model, dir.file("run"));
  c.max_new_tokens = 400;
  c.target = "uniform";
  c.localize = false;
  c.beta = 0;
  GrpoTrainer::Options options;
  options.progress = false;
  options.rollouts = std::make_shared<FixedRolloutSource>(
      **tok, std::map<std::string, std::vector<std::string>>{
                 {"HumanEval/0", {Fence("a", kHasCloseCorrect), Fence("b", kHasCloseBug)}},
                 {"HumanEval/1", {Fence("a", kParenCorrect), Fence("b", kParenBug)}}});
  auto trainer = GrpoTrainer::Create(c, options);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  ASSERT_TRUE((*trainer)->Step().ok());
  for (const auto& r : (*trainer)->last_rollouts()) {
    EXPECT_EQ(r.credit.placement, credit::CreditPlacement::kUniform);
    for (double a : r.credit.advantages) EXPECT_NEAR(a, r.advantage / r.token_ids.size(), 1e-12);
  }
}

// ---- C++ problems: cpp::CppRouter + cpp::CppExecutor behind the same step ----------------

const std::string kHumanEvalCpp = EGCA_DATA_DIR "/cpp/humaneval_cpp.jsonl.gz";

// HumanEval-X CPP/0 (has_close_elements): its reference's body, then one reversed
// comparison, then one missing semicolon.
const std::string kCppHeader =
    "#include<stdio.h>\n"
    "#include<vector>\n"
    "#include<math.h>\n"
    "using namespace std;\n"
    "bool has_close_elements(vector<float> numbers, float threshold){\n"
    "    int i,j;\n"
    "    \n"
    "    for (i=0;i<numbers.size();i++)\n"
    "    for (j=i+1;j<numbers.size();j++)\n";
const std::string kCppCorrect = kCppHeader +
    "    if (abs(numbers[i]-numbers[j])<threshold)\n"
    "    return true;\n"
    "\n"
    "    return false;\n"
    "}\n";
const std::string kCppWrongLine = "    if (abs(numbers[i]-numbers[j])>threshold)";
const std::string kCppWrong = kCppHeader + kCppWrongLine + "\n"
    "    return true;\n"
    "\n"
    "    return false;\n"
    "}\n";
const std::string kCppNoSemicolonLine = "    return false";
const std::string kCppNoSemicolon = kCppHeader +
    "    if (abs(numbers[i]-numbers[j])<threshold)\n"
    "    return true;\n"
    "\n" + kCppNoSemicolonLine + "\n"
    "}\n";

std::string CppFence(const std::string& prose, const std::string& code) {
  return prose + "\n\n```cpp\n" + code + "```\n";
}

// The tokens whose byte ranges overlap completion bytes [begin, end).
std::vector<size_t> TokensOn(const RolloutRecord& r, size_t begin, size_t end) {
  std::vector<size_t> out;
  for (size_t t = 0; t < r.token_bytes.size(); ++t) {
    if (r.token_bytes[t].begin < end && r.token_bytes[t].end > begin) out.push_back(t);
  }
  return out;
}

TEST(GrpoTrainerE2E, CppProblemRoutesThroughClangWithTokenCredit) {
  testing::ScratchDir dir("grpo_cpp");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  auto tok = Tokenizer::FromFile(kTokenizerDir);
  ASSERT_TRUE(tok.ok());
  GrpoConfig c = BaseConfig(model, dir.file("run"));
  c.train_data = kHumanEvalCpp;  // format auto: HumanEval-X C++, language cpp
  c.train_limit = 1;
  c.prompts_per_step = 1;
  c.group_size = 3;
  c.max_new_tokens = 400;
  c.timeout_seconds = 20;  // a compile under load is not the test's concern
  c.beta = 0;
  GrpoTrainer::Options options;
  options.progress = false;
  options.rollouts = std::make_shared<FixedRolloutSource>(
      **tok, std::map<std::string, std::vector<std::string>>{
                 {"CPP/0", {CppFence("Here it is.", kCppCorrect), CppFence("Try this:", kCppWrong),
                            CppFence("Fixed:", kCppNoSemicolon)}}});
  auto trainer = GrpoTrainer::Create(c, options);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  auto m = (*trainer)->Step();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const auto& rs = (*trainer)->last_rollouts();
  ASSERT_EQ(rs.size(), 3u);
  for (const auto& r : rs) ASSERT_TRUE(r.route_error.empty()) << r.route_error;

  // Routes (EGCA eq. 5) and rewards R = R_hat * I_C: the test's main is one test.
  using credit::FailureMode;
  EXPECT_EQ(rs[0].route.mode, FailureMode::kCorrect) << rs[0].route.reason;
  EXPECT_EQ(rs[1].route.mode, FailureMode::kLogic) << rs[1].route.reason;
  EXPECT_EQ(rs[2].route.mode, FailureMode::kSyntax) << rs[2].route.reason;
  EXPECT_EQ(rs[0].program, kCppCorrect);  // the fence's content, nothing of the prompt added
  EXPECT_DOUBLE_EQ(rs[0].reward, 1.0);
  EXPECT_DOUBLE_EQ(rs[1].reward, 0.0);
  EXPECT_DOUBLE_EQ(rs[2].reward, 0.0);
  // Mean-centred advantages by hand: mean R = 1/3, so A = 2/3, -1/3, -1/3.
  EXPECT_NEAR(rs[0].advantage, 2.0 / 3, 1e-12);
  EXPECT_NEAR(rs[1].advantage, -1.0 / 3, 1e-12);
  EXPECT_NEAR(rs[2].advantage, -1.0 / 3, 1e-12);

  // CORRECT: A / T on every token.
  ASSERT_FALSE(rs[0].token_ids.empty());
  for (double a : rs[0].credit.advantages) EXPECT_NEAR(a, (2.0 / 3) / rs[0].token_ids.size(), 1e-12);

  // LOGIC: the earliest divergence is the reversed comparison's line, in completion bytes;
  // its tokens share A = -1/3 equally, every other token gets 0.
  const RolloutRecord& logic = rs[1];
  ASSERT_TRUE(logic.route.earliest_divergence.has_value()) << logic.route.localization_note;
  const size_t line_begin = logic.completion.find(kCppWrongLine);
  ASSERT_NE(line_begin, std::string::npos);
  EXPECT_EQ(logic.route.earliest_divergence->begin_byte, line_begin);
  EXPECT_EQ(logic.route.earliest_divergence->end_byte, line_begin + kCppWrongLine.size());
  const std::vector<size_t> on = TokensOn(logic, line_begin, line_begin + kCppWrongLine.size());
  ASSERT_FALSE(on.empty());
  EXPECT_EQ(logic.credit.placement, credit::CreditPlacement::kLocalized);
  EXPECT_EQ(logic.credit.span_token_count, on.size());
  for (size_t t = 0; t < logic.credit.advantages.size(); ++t) {
    const bool in_span = std::find(on.begin(), on.end(), t) != on.end();
    EXPECT_NEAR(logic.credit.advantages[t], in_span ? (-1.0 / 3) / on.size() : 0.0, 1e-12) << t;
  }

  // SYNTAX: clang's first error ("expected ';'") is on the `return false` line.
  const RolloutRecord& syntax = rs[2];
  ASSERT_TRUE(syntax.route.error_span.has_value()) << syntax.route.error_message;
  const size_t err_begin = syntax.completion.find(kCppNoSemicolonLine + "\n");
  ASSERT_NE(err_begin, std::string::npos);
  EXPECT_EQ(syntax.route.error_span->begin_byte, err_begin);
  EXPECT_EQ(syntax.route.error_span->end_byte, err_begin + kCppNoSemicolonLine.size());
  const std::vector<size_t> err_tokens = TokensOn(syntax, err_begin, err_begin + kCppNoSemicolonLine.size());
  ASSERT_FALSE(err_tokens.empty());
  for (size_t t = 0; t < syntax.credit.advantages.size(); ++t) {
    const bool in_span = std::find(err_tokens.begin(), err_tokens.end(), t) != err_tokens.end();
    EXPECT_NEAR(syntax.credit.advantages[t], in_span ? (-1.0 / 3) / err_tokens.size() : 0.0, 1e-12) << t;
  }

  // The same metrics as Python's.
  EXPECT_NEAR((*m)["mode/correct"], 1.0 / 3, 1e-12);
  EXPECT_NEAR((*m)["mode/logic"], 1.0 / 3, 1e-12);
  EXPECT_NEAR((*m)["mode/syntax"], 1.0 / 3, 1e-12);
  EXPECT_NEAR((*m)["localization/trigger_rate"], 1.0, 1e-12);
  EXPECT_NEAR((*m)["credit/localized"], 2.0 / 3, 1e-12);
  EXPECT_NEAR((*m)["reward"], 1.0 / 3, 1e-12);
  std::ifstream dump(dir.file("run/rollouts/step-1.jsonl"));
  std::string first;
  ASSERT_TRUE(std::getline(dump, first));
  EXPECT_EQ(nlohmann::json::parse(first)["language"], "cpp");
}

// ---- the egca-train binary ---------------------------------------------------------------

std::string WriteConfig(const std::string& path, const std::string& model, const std::string& run_dir,
                        const std::string& extra = "") {
  std::ofstream(path) << "model: " << model << "\nrun_dir: " << run_dir << "\ndata:\n  train: " << kHumanEval
                      << "\n  train_limit: 2\n  eval: " << kHumanEval << "\n  eval_limit: 2\n  shuffle: false\n"
                      << "rollout:\n  group_size: 4\n  prompts_per_step: 2\n  max_new_tokens: 16\n"
                      << "optim:\n  steps: 4\n  lr: 1e-3\n  micro_batch: 4\n  mu: 2\n"
                      << "run:\n  save_every: 2\n  eval_every: 2\n  keep_checkpoints: 0\n"
                      << "eval:\n  samples: 2\n  k: [1, 2]\n  max_new_tokens: 8\n" << extra;
  return path;
}

using testing::Slurp;

TEST(EgcaTrainCli, TrainsLogsCheckpointsAndResumesIdentically) {
  testing::ScratchDir dir("egca_train_cli");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  const std::string cfg = WriteConfig(dir.file("a.yaml"), model, dir.file("run_a"));
  auto a = egca::testing::RunCommand(kTrain + " --config " + cfg + " 2>&1");
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_NE(a.out.find("step 4/4"), std::string::npos) << a.out;

  // metrics.jsonl: 4 train lines, 2 eval lines with pass@k.
  std::ifstream in(dir.file("run_a/metrics.jsonl"));
  int train = 0, eval = 0;
  for (std::string l; std::getline(in, l);) {
    auto j = nlohmann::json::parse(l);
    if (j["kind"] == "train") {
      ++train;
      for (const char* k : {"reward", "reward_std", "frac_reward_zero_std", "mode/syntax", "mode/logic",
                            "localization/trigger_rate", "credit/fallbacks", "kl", "clip_ratio/low_mean",
                            "clip_ratio/high_mean", "entropy", "completions/mean_length",
                            "completions/clipped_ratio", "time/generate", "time/route", "time/update",
                            "tokens_per_second", "ratio_max"}) {
        EXPECT_TRUE(j.contains(k)) << k;
      }
      EXPECT_GT(j["entropy"].get<double>(), 0.0);
    } else {
      ++eval;
      EXPECT_TRUE(j.contains("pass@1_greedy"));
      EXPECT_TRUE(j.contains("pass@2"));
    }
  }
  EXPECT_EQ(train, 4);
  EXPECT_EQ(eval, 2);
  // TensorBoard: parsed back with both CRCs checked.
  std::vector<std::string> events;
  for (const auto& e : fs::directory_iterator(dir.file("run_a/tensorboard"))) events.push_back(e.path());
  ASSERT_EQ(events.size(), 1u);
  auto scalars = ReadTensorBoardScalars(events[0]);
  ASSERT_TRUE(scalars.ok()) << scalars.status().ToString();
  int reward_points = 0;
  for (const auto& s : *scalars) reward_points += s.tag == "train/reward";
  EXPECT_EQ(reward_points, 4);
  // Checkpoints in HF layout with the trainer state; loadable as a model.
  for (const char* f : {"config.json", "model.safetensors", "optimizer.pt", "trainer_state.json", "tokenizer.json"}) {
    EXPECT_TRUE(fs::exists(dir.file(std::string("run_a/checkpoints/step-4/") + f))) << f;
  }
  EXPECT_TRUE(LoadCheckpoint(dir.file("run_a/checkpoints/step-4"), LoadOptions(at::kCPU)).ok());
  EXPECT_TRUE(fs::exists(dir.file("run_a/rollouts/step-3.jsonl")));
  EXPECT_TRUE(fs::exists(dir.file("run_a/config.yaml")));

  // Run B: the same run, killed with SIGKILL after its step-2 checkpoint, then resumed.
  const std::string cfg_b = WriteConfig(dir.file("b.yaml"), model, dir.file("run_b"));
  ASSERT_TRUE(testing::RunAndKillAt({kTrain, "--config", cfg_b},
                                    dir.file("run_b/checkpoints/step-2/trainer_state.json"),
                                    std::chrono::seconds(240)))
      << "the run ended before it was killed";
  ASSERT_FALSE(fs::exists(dir.file("run_b/checkpoints/step-4")));
  auto b = egca::testing::RunCommand(kTrain + " --resume " + dir.file("run_b") + " 2>&1");
  ASSERT_EQ(b.exit_code, 0) << b.out;
  EXPECT_NE(b.out.find("resumed"), std::string::npos) << b.out;
  const std::string wa = Slurp(dir.file("run_a/checkpoints/step-4/model.safetensors"));
  const std::string wb = Slurp(dir.file("run_b/checkpoints/step-4/model.safetensors"));
  ASSERT_FALSE(wa.empty());
  EXPECT_TRUE(wa == wb) << "resumed weights differ from the uninterrupted run's";
  std::ifstream mb(dir.file("run_b/metrics.jsonl"));
  std::vector<int64_t> steps;
  for (std::string l; std::getline(mb, l);) {
    auto j = nlohmann::json::parse(l);
    if (j["kind"] == "train") steps.push_back(j["step"].get<int64_t>());
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 3, 4}));
}

TEST(EgcaTrainCli, BadInputIsOneLineExit2AndWritesNothing) {
  testing::ScratchDir dir("egca_train_bad");
  const std::string model = testing::MakeTinyQwen3(dir.file("model"));
  struct Case {
    std::string name, args, expect;
  };
  const std::string run = dir.file("run");
  const std::string good = WriteConfig(dir.file("good.yaml"), model, run);
  std::ofstream(dir.file("unknown.yaml")) << "model: " << model << "\nrollout:\n  groupsize: 4\n";
  const std::vector<Case> cases = {
      {"missing model", "--config " + good + " --set model=" + dir.file("nope"), "nope"},
      {"G < 2", "--config " + good + " --set rollout.group_size=1", "rollout.group_size"},
      {"unknown key", "--config " + dir.file("unknown.yaml"), "unknown.yaml:3"},
      {"unknown --set key", "--config " + good + " --set optim.learning_rate=1", "optim.learning_rate"},
      {"bad value", "--config " + good + " --set optim.lr=big", "optim.lr"},
      {"missing data", "--config " + good + " --set data.train=" + dir.file("none.jsonl"), "none.jsonl"},
      {"long prompt", "--config " + good + " --set prompt.max_tokens=10", "prompt.max_tokens"},
      {"missing config", "--config " + dir.file("no.yaml"), "no.yaml"},
      {"config is a directory", "--config " + dir.path(), "directory"},
      {"unknown option", "--config " + good + " --bogus", "--bogus"},
      {"resume nothing", "--resume " + dir.file("norun"), "norun"},
      {"bad --lang", "--config " + good + " --lang rust", "--lang rust"},
      {"bad data.lang", "--config " + good + " --set data.lang=java", "data.lang"},
      {"bad loss.normalization", "--config " + good + " --set loss.normalization=mean", "loss.normalization"},
      {"bad max_extra_prompts", "--config " + good + " --set rollout.max_extra_prompts=-3",
       "rollout.max_extra_prompts"},
  };
  for (const Case& c : cases) {
    auto r = egca::testing::RunCommand(kTrain + " " + c.args + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.out;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.name << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << c.name << ": " << r.out;
    EXPECT_FALSE(fs::exists(run)) << c.name << " wrote the run directory";
  }
  // An existing run directory is not overwritten without --overwrite.
  fs::create_directories(run);
  std::ofstream(run + "/keep") << "x";
  auto r = egca::testing::RunCommand(kTrain + " --config " + good + " 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--overwrite"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(run + "/keep"));
}

}  // namespace
}  // namespace egca::trainer
