// The configuration of a GRPO training run: one YAML file (the single source of truth for
// reproducing a run) plus `key=value` overrides from the command line. Keys are dotted
// paths ("rollout.group_size", "optim.lr"); the YAML nests them ("rollout:\n  group_size:
// 16"). Defaults are the EGCA paper's (Appendix H: lr 5e-7, G 16, eps 0.2, beta 0.05,
// temperature 0.8, top-p 0.9). GrpoConfigKeys() lists every key with its help text; the
// README's egca-train section shows a complete file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/status.h"

namespace egca::trainer {

struct GrpoConfig {
  // ---- where things are ----
  std::string model;            // Hugging Face checkpoint directory (config.json + safetensors)
  std::string tokenizer;        // tokenizer.json or its directory; "" = `model`
  std::string reference_model;  // frozen KL reference; "" = `model`
  std::string run_dir;          // outputs: config, metrics, TensorBoard, checkpoints, rollouts

  // ---- data (any format egca-batch reads) ----
  std::string train_data;
  std::string train_format = "auto";   // datasets::DatasetFormatName()s
  std::string eval_data;               // held-out problems; "" = no evaluation
  std::string eval_format = "auto";
  int64_t train_limit = -1;            // problems kept (-1 = all)
  int64_t eval_limit = -1;
  std::string id_prefix;               // datasets::DatasetOptions::id_prefix
  std::vector<std::string> fields;     // APPS+ "key=name" field mapping
  bool shuffle = true;                 // reshuffled every epoch from `seed`
  // The language problems are routed as: "auto" (each problem's own: the HumanEval-X,
  // MBXP and MDEVAL C++ loaders say cpp, every other format python), "python" or "cpp".
  // C++ problems go through cpp::CppRouter + cpp::CppExecutor (program_router.h).
  std::string lang = "auto";

  // ---- prompt (chat template + statement, EGCA eq. 4 constraint suffix) ----
  std::string chat_template = "qwen3";  // "qwen3", "chatml", or a JSON template file
  std::string system_prompt;            // "" = none
  std::string instruction =
      "Write a complete Python program that solves the problem below. Answer with the code "
      "in one ```python block.";
  std::string instruction_cpp =  // the same for C++ problems
      "Write a complete C++ program (with its #include lines, without a main function) that "
      "solves the problem below. Answer with the code in one ```cpp block.";
  bool constraints_in_prompt = false;  // append the problem's constraints (EGCA eq. 4)
  bool extract_constraints = false;    // constraints from the reference (gates::ExtractConstraints)
  int64_t max_prompt_tokens = 1024;    // a longer prompt is an error naming the problem

  // ---- rollout ----
  int64_t group_size = 16;        // G completions per prompt (>= 2)
  int64_t prompts_per_step = 4;   // problems per step (batch = prompts_per_step * G samples)
  int64_t max_new_tokens = 512;
  double temperature = 0.8;
  double top_p = 0.9;
  int64_t top_k = 0;
  std::vector<std::string> stop_strings;
  // Prompts generated together; routing of one chunk runs while the next generates.
  // 0 = all prompts of the step in one batch (no overlap).
  int64_t generation_chunk = 1;
  // Dynamic sampling (DAPO; issue 23, rl/dynamic_sampling.h): groups whose rewards are all
  // equal are dropped and the batch is refilled from further prompts, at most
  // max_extra_prompts of them per step. Single-turn only.
  bool dynamic_sampling = false;
  int64_t max_extra_prompts = 16;

  // ---- routing (gates::Router) ----
  int64_t route_workers = 2;         // sandboxed executors routing in parallel
  double timeout_seconds = 4;        // per test
  int64_t memory_mb = 2048;        // address space per run (includes the warm interpreter)
  bool localize = true;              // off: route only (uniform credit for LOGIC)
  bool check_comparability = true;   // the I_cmp gate
  bool runtime_error_is_logic = false;
  bool prepare_reference = true;     // trace references while the policy generates

  // ---- reward ----
  // egca: R = R_hat * I_C (EGCA eq. 1). binary: R = 1 iff every test passes and I_C = 1,
  // else 0 (issue 37). reflexicoder: the ReflexiCoder reflection reward of a
  // single-trajectory <think>/<answer>/<reflection> completion (credit/reflexicoder.h).
  std::string reward = "egca";

  // ---- credit ----
  // uniform | earliest | last | random. uniform (plain GRPO) is the default: the credit
  // study (docs/results/credit-study) found earliest helps on v0 and hurts on v1.
  std::string target = "uniform";
  // Sign-aware credit (issue 37; credit::PositiveLogicCredit / SyntaxCredit names):
  std::string positive_logic = "span";  // span | uniform | prefix | zero
  std::string syntax_credit = "span";   // span | uniform | cause
  double soft_weight = 1.0;                  // share of A_i on the span (1 = hard mask)
  bool renormalize = true;  // false: span tokens keep A_i / T_i, no T_i / |S| scale-up (issue 23)
  std::string normalization = "mean_centered";  // mean_centered (EGCA eq. 2) | mean_std
  // LOGIC samples whose route's localization_confidence is below this get uniform credit
  // (fallback low_confidence; issue 36). 0 = never. In [0, 1].
  double min_confidence = 0.0;

  // ---- multi-turn (Murphy trees; turns = 1 is single-turn GRPO) ----
  int64_t turns = 1;                 // T: turns of the rollout tree
  int64_t turn_group_size = 0;       // G_t children of each failed node (0 = rollout.group_size)
  std::string feedback = "level_feedback";  // plain | level_feedback | egca | expert_edits | custom
  int64_t sandbox_slice = 1;         // tests shown by level_feedback / egca (see feedback.h)
  int64_t feedback_chars = 2000;     // feedback text cut beyond this
  std::string feedback_command;      // custom: executable reading JSON on stdin
  std::string expert_model;          // expert_edits: checkpoint proposing edits
  int64_t expert_max_new_tokens = 256;
  std::string revision_instruction =
      "The program above is not correct. Write a corrected complete Python program in one "
      "```python block.";
  std::string revision_instruction_cpp =  // the same for C++ problems
      "The program above is not correct. Write a corrected complete C++ program (without a "
      "main function) in one ```cpp block.";
  std::string tree_advantage = "murphy";  // murphy | grpo_mt | mt_grpo | grpo_or | grpo_mr
  std::string backup = "mars";       // mars | mers | none (murphy)
  double backup_gamma = 1.0;         // MeRS discount
  std::string prune = "none";        // none | intra | inter
  int64_t prune_budget = 0;          // b: children per group (intra) or groups per turn (inter)
  int64_t prune_last_turn = 0;       // intra prunes groups at turns <= this (0 = all)
  double mt_alpha = 1.0;             // MT-GRPO: weight of later turns on earlier ones
  bool dump_trees = true;            // trees/step-<n>.{txt,json}

  // ---- loss ----
  double eps_low = 0.2;
  double eps_high = 0.2;
  double beta = 0.05;  // KL coefficient; 0 = no reference model
  // sequence (GRPO/EGCA) | token (DAPO) | constant (Dr. GRPO); rl/loss_normalization.h
  std::string loss_normalization = "sequence";

  // ---- optimizer ----
  int64_t steps = 100;         // rollout steps
  int64_t mu = 1;              // optimizer passes per rollout batch
  int64_t micro_batch = 4;     // samples per forward/backward (gradient accumulation)
  double lr = 5e-7;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_eps = 1e-8;
  double grad_clip = 1.0;      // max global gradient norm; 0 = none
  int64_t warmup_steps = 0;    // optimizer steps of linear warm-up, then linear decay to 0
  bool lr_decay = true;

  // ---- run ----
  std::string device = "auto";  // auto | cpu | cuda | cuda:N
  std::string dtype = "auto";   // auto (bfloat16 on CUDA, float32 on CPU) | float32 | bfloat16 | float64 (tests)
  uint64_t seed = 0;
  int64_t save_every = 50;      // steps between checkpoints (0 = only at the end)
  int64_t keep_checkpoints = 2; // newest kept (0 = all)
  int64_t eval_every = 0;       // steps between evaluations (0 = never; also at the end if > 0)
  bool dump_rollouts = true;    // rollouts/step-<n>.jsonl
  int64_t threads = 0;          // torch intra-op threads (0 = torch's default)
  bool update_kl = true;        // log update/kl: KL(pi before || pi after) of the step (one forward)

  // ---- evaluation ----
  int64_t eval_samples = 1;       // n samples per problem for pass@k (besides greedy pass@1)
  int64_t eval_final_samples = 0; // n at the last step's evaluation (0 = eval_samples)
  std::vector<int64_t> eval_k = {1};
  double eval_temperature = 0.2;  // EGCA's evaluation decoding
  double eval_top_p = 0.95;
  int64_t eval_max_new_tokens = 512;

  // ---- data parallelism (dist/; read only when launched by torchrun or srun) ----
  std::string backend = "auto";   // auto (nccl on CUDA, gloo on CPU) | gloo | nccl
  double dist_timeout = 1800;     // seconds a collective may wait for the other ranks
  double heartbeat_timeout = 60;  // seconds of silence after which a rank is dead
  int64_t check_every = 10;       // steps between replica checksums (0 = never)
  double bucket_mb = 25;          // gradient bucket size (MiB)
  // ---- cooperating agents (MAGRPO-MT, multi_agent.h; issue 24) ----
  // multi_agent.agents: a YAML list of {name, model, instruction, functions}; "" = the one
  // policy of `model`. The tree uses rollout.group_size (G), multi_turn.turns (T),
  // multi_turn.feedback (the transition) and multi_turn.feedback_command (custom).
  std::string ma_agents;
  std::string ma_joint_mode = "align";    // align | cross
  std::string ma_environment = "code";    // code (aux + main) | functions (owned names)
  int64_t ma_max_nodes = 4096;            // joint responses per prompt's tree, at most
  std::string ma_backup = "mean";         // mean (r + gamma * mean of children) | mars | mers
  double ma_gamma = 1.0;                  // discount of the children's returns
  std::string ma_advantage = "mean";      // baseline: mean | max | rloo
  bool ma_zscore = false;                 // divide advantages by the group's std
  double ma_early_termination = 0;        // > 0: a group whose mean reward >= this stops
  std::string ma_other_credit = "uniform";  // the non-blamed agents' tokens: uniform | none
  double ma_transition_timeout = 30;      // seconds for the custom transition
  double ma_level_scale = 1.0;            // reward.kind = magrpo_levels: scale * levels + shift
  double ma_level_shift = 0.0;
};

// One configuration key: its dotted name and what it means (for --help and errors).
struct GrpoConfigKey {
  std::string name;
  std::string help;
};
const std::vector<GrpoConfigKey>& GrpoConfigKeys();

// Sets one key from its text (a YAML scalar, or a YAML flow list "[a, b]" for list keys).
// INVALID_ARGUMENT naming `where` ("run.yaml:12", "--set") and the key for an unknown key
// or a bad value.
Status SetGrpoConfigValue(GrpoConfig* config, std::string_view key, std::string_view value,
                          std::string_view where);

// Reads a YAML file of nested mappings into `config` (keys not in the file keep their
// values). Errors name the file and line.
Status LoadGrpoConfigFile(const std::string& path, GrpoConfig* config);

// Applies "key=value" overrides in order (the CLI's --set).
Status ApplyGrpoConfigOverrides(const std::vector<std::string>& overrides, GrpoConfig* config);

// Consistency of the values (G >= 2, known target/normalization/device/dtype, ranges); the
// error names the key. Does not look at files.
Status ValidateGrpoConfig(const GrpoConfig& config);

// Every key, nested as in the file, with its effective value: what the run directory keeps
// (config.yaml), and LoadGrpoConfigFile of it gives back the same config.
std::string GrpoConfigToYaml(const GrpoConfig& config);

}  // namespace egca::trainer
