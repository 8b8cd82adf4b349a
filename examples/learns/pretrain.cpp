// pretrain: supervised pre-training of a tiny Qwen3-layout decoder on the `learns` corpus
// (examples/learns/make_family.py), so GRPO starts in the near-correct regime.
//
//   learns_pretrain --config RUN.yaml --corpus corpus.jsonl --tokenizer tokenizer.json
//                   --out DIR [--steps N] [--batch B] [--lr LR] [--hidden H] [--layers L]
//                   [--seed S] [--threads T]
//
// Prompts are built exactly as egca-train builds them (the config's chat template, system
// prompt and instruction around the statement, thinking off); the loss is the mean
// cross-entropy of the completion tokens plus the end-of-turn token, from
// DecoderModel::ScoreCompletions. AdamW, linear warm-up then cosine decay to lr / 10.
// DIR gets a Hugging Face checkpoint (config.json, model.safetensors, tokenizer.json) and
// pretrain.json (the settings, the loss curve, the wall time).
#include <ATen/Parallel.h>
#include <torch/types.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <CLI/CLI.hpp>

#include "egca/trainer/policy/chat_template.h"
#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/rl/grpo_config.h"
#include "egca/trainer/rl/problem_prompt.h"
#include "egca/trainer/policy/tokenizer.h"
#include "egca/trainer/policy/cpu_runtime.h"

using namespace egca::trainer;

namespace {

struct Example {
  std::vector<int32_t> prompt;      // chat-formatted prompt ids
  std::vector<int32_t> completion;  // completion ids + end-of-turn
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "learns_pretrain: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  egca::trainer::RetainFreedHostMemory();  // before LibTorch allocates (cpu_runtime.h)
  CLI::App app{"Pre-train a tiny Qwen3-layout decoder on the learns corpus"};
  std::string config_path, corpus_path, tokenizer_path, out_dir;
  int64_t steps = 600, batch = 32, hidden = 128, layers = 4, threads = 0;
  double lr = 3e-3;
  uint64_t seed = 0;
  app.add_option("--config", config_path, "egca-train YAML (chat template, system, instruction)")
      ->required()->check(CLI::ExistingFile);
  app.add_option("--corpus", corpus_path, "corpus.jsonl from make_family.py")->required()->check(CLI::ExistingFile);
  app.add_option("--tokenizer", tokenizer_path, "tokenizer.json")->required()->check(CLI::ExistingFile);
  app.add_option("--out", out_dir, "checkpoint directory to write")->required();
  app.add_option("--steps", steps, "optimizer steps");
  app.add_option("--batch", batch, "examples per step");
  app.add_option("--lr", lr, "peak learning rate");
  app.add_option("--hidden", hidden, "hidden size (heads of 32 dims)");
  app.add_option("--layers", layers, "decoder layers");
  app.add_option("--seed", seed, "init and batch-order seed");
  app.add_option("--threads", threads, "torch threads (0 = default)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return e.get_exit_code() == 0 ? app.exit(e) : (app.exit(e), 2);
  }
  if (threads > 0) egca::trainer::SetComputeThreads(static_cast<int>(threads));
  const auto started = std::chrono::steady_clock::now();

  GrpoConfig config;
  if (auto s = LoadGrpoConfigFile(config_path, &config); !s.ok()) return Fail(s.ToString());
  ChatTemplate chat = ChatTemplate::Qwen3();
  if (config.chat_template == "chatml") {
    chat = ChatTemplate::ChatML();
  } else if (config.chat_template != "qwen3") {
    auto t = ChatTemplate::FromJsonFile(config.chat_template);
    if (!t.ok()) return Fail(t.status().ToString());
    chat = *std::move(t);
  }
  auto tokenizer = Tokenizer::FromFile(tokenizer_path);
  if (!tokenizer.ok()) return Fail(tokenizer.status().ToString());
  const Tokenizer& tok = **tokenizer;
  const auto end_of_turn = tok.TokenId("<|im_end|>");
  if (!end_of_turn) return Fail(tokenizer_path + ": no <|im_end|> token");

  // ---- the corpus, tokenized once ----
  std::vector<Example> examples;
  std::ifstream in(corpus_path);
  std::string line;
  int64_t line_no = 0;
  EncodeOptions completion_encoding;
  completion_encoding.parse_special_tokens = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    nlohmann::json r = nlohmann::json::parse(line, nullptr, false);
    if (r.is_discarded() || !r.contains("text") || !r.contains("completion")) {
      return Fail(corpus_path + ":" + std::to_string(line_no) + ": expected {\"text\", \"completion\"}");
    }
    egca::datasets::ProblemRecord record;
    record.prompt = r["text"].get<std::string>();
    auto prompt = FormatConversation(chat, config.system_prompt,
                                     {{"user", ProblemUserMessage(record, config.instruction)}});
    if (!prompt.ok()) return Fail(prompt.status().ToString());
    Example ex;
    ex.prompt = tok.EncodeIds(*prompt);
    ex.completion = tok.EncodeIds(r["completion"].get<std::string>(), completion_encoding);
    ex.completion.push_back(*end_of_turn);
    examples.push_back(std::move(ex));
  }
  if (examples.empty()) return Fail(corpus_path + ": no examples");

  // ---- the model: Qwen3 layout, heads of 32 dims, tied embeddings ----
  ModelConfig mc;
  mc.family = ModelFamily::kQwen3;
  mc.model_type = "qwen3";
  mc.vocab_size = tok.vocab_size();
  mc.hidden_size = hidden;
  mc.intermediate_size = 3 * hidden;
  mc.num_hidden_layers = layers;
  mc.num_attention_heads = std::max<int64_t>(1, hidden / 32);
  mc.num_key_value_heads = std::max<int64_t>(1, mc.num_attention_heads / 2);
  mc.head_dim = 32;
  mc.max_position_embeddings = 1024;
  mc.tie_word_embeddings = true;
  mc.eos_token_id = *end_of_turn;
  auto model = std::make_shared<DecoderModel>(mc);
  model->InitRandom(seed);
  int64_t n_params = 0;
  for (const auto& p : model->parameters()) n_params += p.numel();

  torch::optim::AdamW optimizer(model->parameters(),
                                torch::optim::AdamWOptions(lr).betas({0.9, 0.95}).weight_decay(0.01));
  std::mt19937_64 rng(seed);
  std::vector<size_t> order(examples.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  size_t cursor = order.size();
  const int64_t warmup = std::max<int64_t>(1, steps / 20);
  nlohmann::json curve = nlohmann::json::array();
  double running = 0;
  for (int64_t step = 1; step <= steps; ++step) {
    std::vector<std::vector<int32_t>> prompts, completions;
    for (int64_t b = 0; b < batch; ++b) {
      if (cursor == order.size()) {
        std::shuffle(order.begin(), order.end(), rng);
        cursor = 0;
      }
      const Example& ex = examples[order[cursor++]];
      prompts.push_back(ex.prompt);
      completions.push_back(ex.completion);
    }
    const double progress = static_cast<double>(step - warmup) / static_cast<double>(std::max<int64_t>(1, steps - warmup));
    const double step_lr = step <= warmup ? lr * static_cast<double>(step) / static_cast<double>(warmup)
                                          : lr * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * progress)));
    for (auto& group : optimizer.param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(step_lr);
    }
    optimizer.zero_grad();
    CompletionLogProbs lp = model->ScoreCompletions(prompts, completions);
    at::Tensor loss = -(lp.log_probs * lp.mask).sum() / lp.mask.sum();  // mean token NLL
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    optimizer.step();
    const double l = loss.item<double>();
    running = step == 1 ? l : 0.95 * running + 0.05 * l;
    if (step % 25 == 0 || step == steps) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::fprintf(stderr, "pretrain step %lld/%lld  loss %.4f  lr %.2e  %.0fs\n", static_cast<long long>(step),
                   static_cast<long long>(steps), running, step_lr, secs);
      curve.push_back({{"step", step}, {"loss", running}});
    }
  }

  if (auto s = SaveCheckpoint(*model, out_dir); !s.ok()) return Fail(s.ToString());
  std::error_code ec;
  std::filesystem::copy_file(tokenizer_path, out_dir + "/tokenizer.json",
                             std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) return Fail(out_dir + "/tokenizer.json: " + ec.message());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  nlohmann::json summary = {{"examples", examples.size()}, {"parameters", n_params}, {"steps", steps},
                            {"batch", batch}, {"lr", lr}, {"hidden", hidden}, {"layers", layers},
                            {"vocab", mc.vocab_size}, {"seed", seed}, {"seconds", secs},
                            {"final_loss", running}, {"loss_curve", curve}};
  std::ofstream(out_dir + "/pretrain.json") << summary.dump(1) << "\n";
  std::printf("pretrained %lld parameters on %zu examples in %.0fs, loss %.4f -> %s\n",
              static_cast<long long>(n_params), examples.size(), secs, running, out_dir.c_str());
  return 0;
}
