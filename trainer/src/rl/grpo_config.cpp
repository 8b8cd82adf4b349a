#include "egca/trainer/rl/grpo_config.h"

#include <cmath>
#include <sstream>
#include <variant>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "egca/core/files.h"
#include "egca/credit/token_credit.h"
#include "egca/trainer/rl/loss_normalization.h"
#include "egca/trainer/rl/multi_agent.h"

namespace egca::trainer {
namespace {

using Member = std::variant<std::string GrpoConfig::*, int64_t GrpoConfig::*, uint64_t GrpoConfig::*,
                            double GrpoConfig::*, bool GrpoConfig::*,
                            std::vector<std::string> GrpoConfig::*,
                            std::vector<int64_t> GrpoConfig::*>;

struct Field {
  const char* name;
  Member member;
  const char* help;
};

// The one table of keys: parsing, validation messages, --help and the written config all
// come from it, so a key cannot be readable but not written (or the reverse).
const std::vector<Field>& Fields() {
  using C = GrpoConfig;
  static const std::vector<Field> fields = {
      {"model", &C::model, "Hugging Face checkpoint directory of the policy"},
      {"tokenizer", &C::tokenizer, "tokenizer.json or its directory (default: model)"},
      {"reference_model", &C::reference_model, "frozen KL reference checkpoint (default: model)"},
      {"run_dir", &C::run_dir, "output directory"},
      {"data.train", &C::train_data, "training problems (any egca-batch format)"},
      {"data.train_format", &C::train_format, "auto, humaneval, mbpp, apps_dir, apps_plus, ..."},
      {"data.eval", &C::eval_data, "held-out problems for pass@k (empty: no evaluation)"},
      {"data.eval_format", &C::eval_format, "format of data.eval"},
      {"data.train_limit", &C::train_limit, "training problems kept (-1 = all)"},
      {"data.eval_limit", &C::eval_limit, "evaluation problems kept (-1 = all)"},
      {"data.id_prefix", &C::id_prefix, "problem id prefix (mbpp/, apps/ ...)"},
      {"data.fields", &C::fields, "APPS+ field mapping, list of key=name"},
      {"data.shuffle", &C::shuffle, "reshuffle the problems every epoch"},
      {"data.lang", &C::lang, "auto (each problem's own language), python or cpp"},
      {"prompt.chat_template", &C::chat_template, "qwen3, chatml, or a JSON template file"},
      {"prompt.system", &C::system_prompt, "system message (empty: none)"},
      {"prompt.instruction", &C::instruction, "text before the problem statement"},
      {"prompt.instruction_cpp", &C::instruction_cpp, "text before a C++ problem's statement"},
      {"prompt.constraints", &C::constraints_in_prompt,
       "append the problem's constraints (EGCA eq. 4)"},
      {"prompt.extract_constraints", &C::extract_constraints,
       "derive constraints from the reference solution"},
      {"prompt.max_tokens", &C::max_prompt_tokens, "longest prompt allowed (tokens)"},
      {"rollout.group_size", &C::group_size, "G completions per prompt (>= 2)"},
      {"rollout.prompts_per_step", &C::prompts_per_step, "problems per step"},
      {"rollout.max_new_tokens", &C::max_new_tokens, "tokens per completion"},
      {"rollout.temperature", &C::temperature, "sampling temperature"},
      {"rollout.top_p", &C::top_p, "nucleus sampling mass"},
      {"rollout.top_k", &C::top_k, "top-k (0 = off)"},
      {"rollout.stop", &C::stop_strings, "stop strings"},
      {"rollout.generation_chunk", &C::generation_chunk,
       "prompts generated together; routing overlaps the next chunk (0 = all at once)"},
      {"rollout.dynamic_sampling", &C::dynamic_sampling,
       "drop groups whose rewards are all equal and refill the batch from further prompts"},
      {"rollout.max_extra_prompts", &C::max_extra_prompts,
       "dynamic sampling: refill prompts per step at most (0: drop without refilling)"},
      {"route.workers", &C::route_workers, "sandboxed executors routing in parallel"},
      {"route.timeout", &C::timeout_seconds, "seconds per test"},
      {"route.memory_mb", &C::memory_mb, "memory limit per run (MiB)"},
      {"route.localize", &C::localize, "localize LOGIC samples (off: uniform credit)"},
      {"route.check_comparability", &C::check_comparability, "the I_cmp gate"},
      {"route.runtime_error_is_logic", &C::runtime_error_is_logic, "run-time errors are LOGIC"},
      {"route.prepare_reference", &C::prepare_reference, "trace references while generating"},
      {"reward.kind", &C::reward,
       "egca (R_hat * I_C), binary (1 iff every test passes and I_C = 1) or reflexicoder "
       "(reflection-format reward)"},
      {"credit.target", &C::target, "uniform (plain GRPO, default), earliest, last or random"},
      {"credit.positive_logic", &C::positive_logic,
       "a LOGIC sample's positive advantage: span (EGCA), uniform, prefix (before the span) or "
       "zero"},
      {"credit.syntax", &C::syntax_credit,
       "a SYNTAX sample's advantage: span (the raising statement, EGCA), uniform or cause "
       "(name errors: binding sites through the use)"},
      {"credit.soft_weight", &C::soft_weight, "share of A_i on the span (1 = hard mask)"},
      {"credit.renormalize", &C::renormalize,
       "false: the span keeps A_i / T_i per token, the rest 0 (mask without renormalizing)"},
      {"credit.min_confidence", &C::min_confidence,
       "LOGIC samples whose localization confidence is below this get uniform credit (0: never)"},
      {"credit.normalization", &C::normalization, "mean_centered (EGCA eq. 2) or mean_std"},
      {"multi_turn.turns", &C::turns, "T turns of the rollout tree (1: single-turn GRPO)"},
      {"multi_turn.group_size", &C::turn_group_size,
       "children per failed node (0: rollout.group_size)"},
      {"multi_turn.feedback", &C::feedback, "plain, level_feedback, egca, expert_edits or custom"},
      {"multi_turn.sandbox_slice", &C::sandbox_slice, "tests shown: n first, -n last, 0 all"},
      {"multi_turn.feedback_chars", &C::feedback_chars, "feedback text cut beyond this"},
      {"multi_turn.feedback_command", &C::feedback_command,
       "custom: command reading JSON on stdin"},
      {"multi_turn.expert_model", &C::expert_model, "expert_edits: checkpoint proposing edits"},
      {"multi_turn.expert_max_new_tokens", &C::expert_max_new_tokens,
       "expert_edits: tokens per proposal"},
      {"multi_turn.revision_instruction", &C::revision_instruction, "text after the feedback"},
      {"multi_turn.revision_instruction_cpp", &C::revision_instruction_cpp,
       "text after the feedback (C++ problems)"},
      {"multi_turn.advantage", &C::tree_advantage, "murphy, grpo_mt, mt_grpo, grpo_or or grpo_mr"},
      {"multi_turn.backup", &C::backup, "murphy: mars, mers or none"},
      {"multi_turn.gamma", &C::backup_gamma, "MeRS discount"},
      {"multi_turn.prune", &C::prune, "none, intra (IntraP) or inter (InterP)"},
      {"multi_turn.prune_budget", &C::prune_budget,
       "children per group (intra) or groups per turn (inter)"},
      {"multi_turn.prune_last_turn", &C::prune_last_turn,
       "intra: prune groups up to this turn (0: all)"},
      {"multi_turn.alpha", &C::mt_alpha, "MT-GRPO: weight of later turns' advantages"},
      {"multi_turn.dump_trees", &C::dump_trees, "write trees/step-N.txt and .json"},
      {"loss.eps_low", &C::eps_low, "clip below: 1 - eps_low"},
      {"loss.eps_high", &C::eps_high, "clip above: 1 + eps_high"},
      {"loss.beta", &C::beta, "KL coefficient (0: no reference model)"},
      {"loss.normalization", &C::loss_normalization,
       "sequence (GRPO/EGCA: 1/T_i per sample), token (DAPO: 1/tokens of the batch) or "
       "constant (Dr. GRPO: 1/rollout.max_new_tokens)"},
      {"optim.steps", &C::steps, "rollout steps"},
      {"optim.mu", &C::mu, "optimizer passes per rollout batch"},
      {"optim.micro_batch", &C::micro_batch, "samples per forward/backward"},
      {"optim.lr", &C::lr, "peak learning rate (AdamW)"},
      {"optim.weight_decay", &C::weight_decay, "AdamW weight decay"},
      {"optim.beta1", &C::adam_beta1, "AdamW beta1"},
      {"optim.beta2", &C::adam_beta2, "AdamW beta2"},
      {"optim.eps", &C::adam_eps, "AdamW epsilon"},
      {"optim.grad_clip", &C::grad_clip, "max gradient norm (0 = none)"},
      {"optim.warmup_steps", &C::warmup_steps, "optimizer steps of linear warm-up"},
      {"optim.lr_decay", &C::lr_decay, "linear decay to 0 after warm-up"},
      {"run.device", &C::device, "auto, cpu, cuda or cuda:N"},
      {"run.dtype", &C::dtype, "auto, float32, bfloat16 or float64"},
      {"run.seed", &C::seed, "seed of sampling, data order and random targets"},
      {"run.save_every", &C::save_every, "steps between checkpoints (0: at the end)"},
      {"run.keep_checkpoints", &C::keep_checkpoints, "checkpoints kept (0 = all)"},
      {"run.eval_every", &C::eval_every, "steps between evaluations (0: never)"},
      {"run.dump_rollouts", &C::dump_rollouts, "write rollouts/step-N.jsonl"},
      {"run.threads", &C::threads, "torch intra-op threads (0: default)"},
      {"run.update_kl", &C::update_kl,
       "log update/kl, KL(policy before || after the step) on its tokens (one more forward)"},
      {"eval.samples", &C::eval_samples, "n samples per problem for pass@k"},
      {"eval.final_samples", &C::eval_final_samples,
       "n samples per problem at the last step's evaluation (0: eval.samples)"},
      {"eval.k", &C::eval_k, "k values of pass@k"},
      {"eval.temperature", &C::eval_temperature, "sampling temperature for pass@k"},
      {"eval.top_p", &C::eval_top_p, "nucleus mass for pass@k"},
      {"eval.max_new_tokens", &C::eval_max_new_tokens, "tokens per evaluation completion"},
      // Data parallelism (torchrun / srun launches; see docs/training.md).
      {"train.backend", &C::backend, "auto (nccl on CUDA, gloo on CPU), gloo or nccl"},
      {"train.timeout", &C::dist_timeout, "seconds a collective waits for the other ranks"},
      {"train.heartbeat_timeout", &C::heartbeat_timeout,
       "seconds of silence that mark a rank dead"},
      {"train.check_every", &C::check_every, "steps between replica checksums (0: never)"},
      {"train.bucket_mb", &C::bucket_mb, "gradient all-reduce bucket (MiB)"},
      // Cooperating agents (issue 24, multi_agent.h).
      {"multi_agent.agents", &C::ma_agents, "list of {name, model, instruction, functions} (empty: one policy)"},
      {"multi_agent.joint_mode", &C::ma_joint_mode, "align (G joint responses per node) or cross (G^N)"},
      {"multi_agent.environment", &C::ma_environment, "code (aux + main) or functions (agents own names)"},
      {"multi_agent.max_nodes", &C::ma_max_nodes, "joint responses per tree, at most (checked before running)"},
      {"multi_agent.backup", &C::ma_backup, "mean (r + gamma * mean of children), mars or mers"},
      {"multi_agent.gamma", &C::ma_gamma, "discount of the children's returns"},
      {"multi_agent.advantage", &C::ma_advantage, "baseline: mean, max or rloo"},
      {"multi_agent.zscore", &C::ma_zscore, "divide advantages by the group's std"},
      {"multi_agent.early_termination", &C::ma_early_termination,
       "> 0: a node whose joint responses' mean reward >= this is not expanded"},
      {"multi_agent.other_credit", &C::ma_other_credit, "tokens of agents not blamed by a span: uniform or none"},
      {"multi_agent.transition_timeout", &C::ma_transition_timeout, "seconds for the custom transition"},
      {"multi_agent.level_scale", &C::ma_level_scale, "magrpo_levels: scale"},
      {"multi_agent.level_shift", &C::ma_level_shift, "magrpo_levels: shift"},
  };
  return fields;
}

const Field* FindField(std::string_view key) {
  for (const Field& f : Fields()) {
    if (key == f.name) return &f;
  }
  return nullptr;
}

std::string Nearest(std::string_view key) {
  // The key sharing the longest suffix after the last '.', else none: "group_size" ->
  // "rollout.group_size".
  const std::string_view leaf = key.substr(key.rfind('.') == std::string_view::npos ? 0 : key.rfind('.') + 1);
  for (const Field& f : Fields()) {
    std::string_view n = f.name;
    const auto dot = n.rfind('.');
    if ((dot == std::string_view::npos ? n : n.substr(dot + 1)) == leaf) return f.name;
  }
  return "";
}

Status UnknownKey(std::string_view key, std::string_view where) {
  const std::string near = Nearest(key);
  return InvalidArgument(fmt::format("{}: unknown config key '{}'{}", where, key,
                                     near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
}

Status BadValue(std::string_view key, std::string_view value, std::string_view where,
                std::string_view expected) {
  return InvalidArgument(
      fmt::format("{}: config key '{}': bad value '{}' ({} expected)", where, key, value, expected));
}

bool ParseBool(std::string_view s, bool* out) {
  if (s == "true" || s == "True" || s == "yes" || s == "on" || s == "1") return *out = true, true;
  if (s == "false" || s == "False" || s == "no" || s == "off" || s == "0") return *out = false, true;
  return false;
}

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  if (s.empty()) return false;
  std::istringstream in{std::string(s)};
  T v{};
  in >> v;
  if (in.fail() || !in.eof()) return false;
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(v)) return false;
  }
  *out = v;
  return true;
}

// A list value: a YAML flow sequence "[a, b]" or one scalar.
StatusOr<std::vector<std::string>> ParseList(std::string_view value, std::string_view key,
                                             std::string_view where) {
  try {
    YAML::Node node = YAML::Load(std::string(value));
    std::vector<std::string> out;
    if (node.IsSequence()) {
      for (const auto& item : node) {
        if (!item.IsScalar()) return BadValue(key, value, where, "a list of scalars");
        out.push_back(item.as<std::string>());
      }
    } else if (node.IsScalar()) {
      out.push_back(node.as<std::string>());
    } else if (!node.IsNull()) {
      return BadValue(key, value, where, "a list");
    }
    return out;
  } catch (const YAML::Exception& e) {
    return BadValue(key, value, where, "a YAML list");
  }
}

std::string YamlScalar(const std::string& s) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}

std::string FormatDouble(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eE") == std::string::npos && s.find("inf") == std::string::npos) s += ".0";
  return s;
}

void Flatten(const YAML::Node& node, const std::string& prefix, const std::string& path,
             GrpoConfig* config, Status* status) {
  if (!status->ok()) return;
  for (const auto& kv : node) {
    const std::string key = prefix.empty() ? kv.first.as<std::string>()
                                           : prefix + "." + kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    const std::string where = fmt::format("{}:{}", path, kv.first.Mark().line + 1);
    if (v.IsMap()) {
      if (FindField(key) != nullptr) {
        *status = BadValue(key, "{...}", where, "a value, not a mapping");
        return;
      }
      Flatten(v, key, path, config, status);
      continue;
    }
    const Field* f = FindField(key);
    if (f == nullptr) {
      *status = UnknownKey(key, where);
      return;
    }
    std::string text;
    if (v.IsSequence()) {
      YAML::Emitter e;
      e << YAML::Flow << v;
      text = e.c_str();
    } else if (v.IsNull()) {
      text = "";
    } else {
      text = v.as<std::string>();
    }
    *status = SetGrpoConfigValue(config, key, text, where);
    if (!status->ok()) return;
  }
}

}  // namespace

const std::vector<GrpoConfigKey>& GrpoConfigKeys() {
  static const std::vector<GrpoConfigKey> keys = [] {
    std::vector<GrpoConfigKey> out;
    for (const Field& f : Fields()) out.push_back({f.name, f.help});
    return out;
  }();
  return keys;
}

Status SetGrpoConfigValue(GrpoConfig* config, std::string_view key, std::string_view value,
                          std::string_view where) {
  const Field* f = FindField(key);
  if (f == nullptr) return UnknownKey(key, where);
  return std::visit(
      [&](auto member) -> Status {
        using T = std::decay_t<decltype(config->*member)>;
        T& slot = config->*member;
        if constexpr (std::is_same_v<T, std::string>) {
          slot = std::string(value);
        } else if constexpr (std::is_same_v<T, bool>) {
          if (!ParseBool(value, &slot)) return BadValue(key, value, where, "true or false");
        } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>) {
          if (!ParseNumber(value, &slot)) return BadValue(key, value, where, "an integer");
        } else if constexpr (std::is_same_v<T, double>) {
          if (!ParseNumber(value, &slot)) return BadValue(key, value, where, "a number");
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          EGCA_ASSIGN_OR_RETURN(slot, ParseList(value, key, where));
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          EGCA_ASSIGN_OR_RETURN(auto items, ParseList(value, key, where));
          std::vector<int64_t> parsed;
          for (const auto& item : items) {
            int64_t v = 0;
            if (!ParseNumber(item, &v)) return BadValue(key, value, where, "a list of integers");
            parsed.push_back(v);
          }
          slot = std::move(parsed);
        }
        return Status::Ok();
      },
      f->member);
}

Status LoadGrpoConfigFile(const std::string& path, GrpoConfig* config) {
  EGCA_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return InvalidArgument(fmt::format("{}:{}: not valid YAML: {}", path, e.mark.line + 1, e.msg));
  }
  if (root.IsNull()) return InvalidArgument(fmt::format("{}: empty config file", path));
  if (!root.IsMap()) return InvalidArgument(fmt::format("{}:1: the config must be a mapping of keys", path));
  Status status = Status::Ok();
  try {
    Flatten(root, "", path, config, &status);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg));
  }
  return status;
}

Status ApplyGrpoConfigOverrides(const std::vector<std::string>& overrides, GrpoConfig* config) {
  for (const std::string& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument(fmt::format("--set '{}': expected key=value", o));
    }
    EGCA_RETURN_IF_ERROR(SetGrpoConfigValue(config, o.substr(0, eq), o.substr(eq + 1), "--set"));
  }
  return Status::Ok();
}

Status ValidateGrpoConfig(const GrpoConfig& c) {
  auto bad = [](const char* key, const std::string& why) {
    return InvalidArgument(fmt::format("config key '{}': {}", key, why));
  };
  if (c.model.empty() && c.ma_agents.empty()) {
    return bad("model", "required (a Hugging Face checkpoint directory)");
  }
  if (c.run_dir.empty()) return bad("run_dir", "required");
  if (c.train_data.empty()) return bad("data.train", "required");
  if (c.lang != "auto" && c.lang != "python" && c.lang != "cpp") {
    return bad("data.lang", fmt::format("'{}' is not auto, python or cpp", c.lang));
  }
  if (c.group_size < 2) return bad("rollout.group_size", fmt::format("G = {}: GRPO needs at least 2", c.group_size));
  if (c.prompts_per_step < 1) return bad("rollout.prompts_per_step", "must be >= 1");
  if (c.max_new_tokens < 1) return bad("rollout.max_new_tokens", "must be >= 1");
  if (c.temperature < 0) return bad("rollout.temperature", "must be >= 0");
  if (!(c.top_p > 0 && c.top_p <= 1)) return bad("rollout.top_p", "must be in (0, 1]");
  if (c.top_k < 0) return bad("rollout.top_k", "must be >= 0");
  if (c.generation_chunk < 0) return bad("rollout.generation_chunk", "must be >= 0");
  if (c.max_prompt_tokens < 1) return bad("prompt.max_tokens", "must be >= 1");
  if (c.route_workers < 1) return bad("route.workers", "must be >= 1");
  if (!(c.timeout_seconds > 0)) return bad("route.timeout", "must be > 0");
  if (c.memory_mb < 16) return bad("route.memory_mb", "must be >= 16");
  if (c.target != "earliest" && c.target != "last" && c.target != "random" && c.target != "uniform") {
    return bad("credit.target", fmt::format("'{}' is not earliest, last, random or uniform", c.target));
  }
  if (!credit::ParsePositiveLogicCredit(c.positive_logic)) {
    return bad("credit.positive_logic",
               fmt::format("'{}' is not span, uniform, prefix or zero", c.positive_logic));
  }
  if (!credit::ParseSyntaxCredit(c.syntax_credit)) {
    return bad("credit.syntax", fmt::format("'{}' is not span, uniform or cause", c.syntax_credit));
  }
  if (!(c.soft_weight >= 0 && c.soft_weight <= 1)) return bad("credit.soft_weight", "must be in [0, 1]");
  if (!c.renormalize && c.soft_weight != 1) {
    return bad("credit.renormalize", "false needs credit.soft_weight = 1");
  }
  if (!(c.min_confidence >= 0 && c.min_confidence <= 1)) {
    return bad("credit.min_confidence", "must be in [0, 1]");
  }
  if (c.normalization != "mean_centered" && c.normalization != "mean_std") {
    return bad("credit.normalization", fmt::format("'{}' is not mean_centered or mean_std", c.normalization));
  }
  if (c.reward != "egca" && c.reward != "binary" && c.reward != "reflexicoder" &&
      c.reward != "magrpo_levels") {
    return bad("reward.kind",
               fmt::format("'{}' is not egca, binary, reflexicoder or magrpo_levels", c.reward));
  }
  if (c.reward == "binary" && IsMultiAgent(c)) {
    return bad("reward.kind", "binary grades one program per sample: not with multi_agent.agents");
  }
  if (c.reward == "magrpo_levels" && c.ma_agents.empty()) {
    return bad("reward.kind", "magrpo_levels grades joint programs: it needs multi_agent.agents");
  }
  if (c.turns < 1) return bad("multi_turn.turns", "must be >= 1");
  if (c.turn_group_size < 0) return bad("multi_turn.group_size", "must be >= 0");
  if (c.turns > 1 && c.turn_group_size == 1) {
    return bad("multi_turn.group_size", "G_t = 1: a group needs at least 2 (or 0 for rollout.group_size)");
  }
  if (c.feedback != "plain" && c.feedback != "level_feedback" && c.feedback != "egca" &&
      c.feedback != "expert_edits" && c.feedback != "custom") {
    return bad("multi_turn.feedback",
               fmt::format("'{}' is not plain, level_feedback, egca, expert_edits or custom", c.feedback));
  }
  if (c.turns > 1 && c.feedback == "custom" && c.feedback_command.empty()) {
    return bad("multi_turn.feedback_command", "required by multi_turn.feedback = custom");
  }
  if (c.turns > 1 && c.feedback == "expert_edits" && c.expert_model.empty()) {
    return bad("multi_turn.expert_model", "required by multi_turn.feedback = expert_edits");
  }
  if (c.feedback_chars < 1) return bad("multi_turn.feedback_chars", "must be >= 1");
  if (c.expert_max_new_tokens < 1) return bad("multi_turn.expert_max_new_tokens", "must be >= 1");
  if (c.tree_advantage != "murphy" && c.tree_advantage != "grpo_mt" && c.tree_advantage != "mt_grpo" &&
      c.tree_advantage != "grpo_or" && c.tree_advantage != "grpo_mr") {
    return bad("multi_turn.advantage",
               fmt::format("'{}' is not murphy, grpo_mt, mt_grpo, grpo_or or grpo_mr", c.tree_advantage));
  }
  if (c.backup != "mars" && c.backup != "mers" && c.backup != "none") {
    return bad("multi_turn.backup", fmt::format("'{}' is not mars, mers or none", c.backup));
  }
  if (!(c.backup_gamma >= 0 && c.backup_gamma <= 1)) return bad("multi_turn.gamma", "must be in [0, 1]");
  if (c.prune != "none" && c.prune != "intra" && c.prune != "inter") {
    return bad("multi_turn.prune", fmt::format("'{}' is not none, intra or inter", c.prune));
  }
  if (c.prune_budget < 0) return bad("multi_turn.prune_budget", "must be >= 0");
  if (c.prune != "none" && c.prune_budget < 1) return bad("multi_turn.prune_budget", "must be >= 1 when pruning");
  if (c.prune_last_turn < 0) return bad("multi_turn.prune_last_turn", "must be >= 0");
  if (!(c.mt_alpha >= 0)) return bad("multi_turn.alpha", "must be >= 0");
  if (!(c.eps_low >= 0 && c.eps_low < 1)) return bad("loss.eps_low", "must be in [0, 1)");
  if (!(c.eps_high >= 0)) return bad("loss.eps_high", "must be >= 0");
  if (!(c.beta >= 0)) return bad("loss.beta", "must be >= 0");
  if (!ParseLossNormalization(c.loss_normalization)) {
    return bad("loss.normalization",
               fmt::format("'{}' is not sequence, token or constant", c.loss_normalization));
  }
  if (c.max_extra_prompts < 0) return bad("rollout.max_extra_prompts", "must be >= 0");
  if (c.dynamic_sampling && c.turns > 1) {
    return bad("rollout.dynamic_sampling", "single-turn only (multi_turn.turns = 1)");
  }
  if (c.steps < 1) return bad("optim.steps", "must be >= 1");
  if (c.mu < 1) return bad("optim.mu", "must be >= 1");
  if (c.micro_batch < 1) return bad("optim.micro_batch", "must be >= 1");
  if (!(c.lr >= 0)) return bad("optim.lr", "must be >= 0");
  if (!(c.weight_decay >= 0)) return bad("optim.weight_decay", "must be >= 0");
  if (!(c.adam_beta1 >= 0 && c.adam_beta1 < 1)) return bad("optim.beta1", "must be in [0, 1)");
  if (!(c.adam_beta2 >= 0 && c.adam_beta2 < 1)) return bad("optim.beta2", "must be in [0, 1)");
  if (!(c.adam_eps > 0)) return bad("optim.eps", "must be > 0");
  if (!(c.grad_clip >= 0)) return bad("optim.grad_clip", "must be >= 0");
  if (c.warmup_steps < 0) return bad("optim.warmup_steps", "must be >= 0");
  if (c.device != "auto" && c.device != "cpu" && c.device.rfind("cuda", 0) != 0) {
    return bad("run.device", fmt::format("'{}' is not auto, cpu, cuda or cuda:N", c.device));
  }
  if (c.dtype != "auto" && c.dtype != "float32" && c.dtype != "bfloat16" && c.dtype != "float64") {
    return bad("run.dtype", fmt::format("'{}' is not auto, float32, bfloat16 or float64", c.dtype));
  }
  if (c.save_every < 0) return bad("run.save_every", "must be >= 0");
  if (c.keep_checkpoints < 0) return bad("run.keep_checkpoints", "must be >= 0");
  if (c.eval_every < 0) return bad("run.eval_every", "must be >= 0");
  if (c.threads < 0) return bad("run.threads", "must be >= 0");
  if (c.eval_samples < 1) return bad("eval.samples", "must be >= 1");
  if (c.eval_final_samples < 0) return bad("eval.final_samples", "must be >= 0");
  for (int64_t k : c.eval_k) {
    if (k < 1) return bad("eval.k", fmt::format("k = {} must be >= 1", k));
  }
  if (c.eval_temperature < 0) return bad("eval.temperature", "must be >= 0");
  if (!(c.eval_top_p > 0 && c.eval_top_p <= 1)) return bad("eval.top_p", "must be in (0, 1]");
  if (c.eval_max_new_tokens < 1) return bad("eval.max_new_tokens", "must be >= 1");
  if (c.backend != "auto" && c.backend != "gloo" && c.backend != "nccl") {
    return bad("train.backend", fmt::format("'{}' is not auto, gloo or nccl", c.backend));
  }
  if (!(c.dist_timeout > 0)) return bad("train.timeout", "must be > 0 seconds");
  if (!(c.heartbeat_timeout > 0)) return bad("train.heartbeat_timeout", "must be > 0 seconds");
  if (c.check_every < 0) return bad("train.check_every", "must be >= 0");
  if (!(c.bucket_mb > 0)) return bad("train.bucket_mb", "must be > 0");
  if (IsMultiAgent(c)) return ValidateMultiAgentConfig(c);  // issue 24
  return Status::Ok();
}

std::string GrpoConfigToYaml(const GrpoConfig& config) {
  std::string out = "# egca-train effective configuration (every key, with its value)\n";
  std::string section;
  for (const Field& f : Fields()) {
    std::string name = f.name;
    const auto dot = name.find('.');
    std::string indent;
    if (dot != std::string::npos) {
      const std::string s = name.substr(0, dot);
      if (s != section) out += s + ":\n", section = s;
      name = name.substr(dot + 1);
      indent = "  ";
    } else {
      section.clear();
    }
    const std::string value = std::visit(
        [&](auto member) -> std::string {
          using T = std::decay_t<decltype(config.*member)>;
          const T& v = config.*member;
          if constexpr (std::is_same_v<T, std::string>) {
            return YamlScalar(v);
          } else if constexpr (std::is_same_v<T, bool>) {
            return v ? "true" : "false";
          } else if constexpr (std::is_same_v<T, double>) {
            return FormatDouble(v);
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            std::string s = "[";
            for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + YamlScalar(v[i]);
            return s + "]";
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            return fmt::format("[{}]", fmt::join(v, ", "));
          } else {
            return fmt::format("{}", v);
          }
        },
        f.member);
    out += fmt::format("{}{}: {}  # {}\n", indent, name, value, f.help);
  }
  return out;
}

}  // namespace egca::trainer
