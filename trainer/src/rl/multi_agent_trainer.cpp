// Cooperating agents (MAGRPO-MT): MultiAgentTrainer. One step, top to bottom:
//   1. prompts    this rank's share of the step's problems (dist::Distribution::ShardOf);
//   2. rollout    turn by turn: every pending group (the task, or a joint response to
//                 revise) gets G completions from every agent (its own policy and prompt);
//                 joint responses are formed (align / cross), joined into programs and
//                 routed on the sandboxed executors; the transition builds each agent's
//                 next prompt for every joint response (early termination stops a group);
//   3. credit     returns backed up through the joint tree, per-agent returns and
//                 advantages per group (multi_agent_credit.cpp), then EGCA token credit per
//                 agent: the failure's span is attributed to the agent whose code holds it;
//   4. update     every agent's own AdamW step on its own samples (GrpoTrainer::Impl's
//                 UpdatePolicy with that agent's optimizer and reference);
//   5. log        RUN_DIR/metrics.jsonl (joint), RUN_DIR/agents/<name>/metrics.jsonl,
//                 trees/step-N.json, rollouts/step-N.jsonl, the progress line;
//   6. save       RUN_DIR/agents/<name>/checkpoints/step-N (writer only).
// The problems, executors, routing settings, token credit and the update are the
// single-agent trainer's (GrpoTrainer::Impl), used through its private header.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <mutex>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/serialize.h>
#include <nlohmann/json.hpp>

#include "egca/core/remove_tree.h"
#include "egca/core/files.h"
#include "egca/core/mix.h"
#include "egca/credit/grpo.h"
#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/policy/cpu_runtime.h"
#include "egca/trainer/rl/adamw.h"
#include "egca/trainer/rl/feedback.h"
#include "egca/trainer/rl/multi_agent.h"
#include "egca/trainer/rl/problem_prompt.h"
#include "grpo_trainer_impl.h"

namespace egca::trainer {

namespace {

struct AgentState {
  AgentSpec spec;
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<int32_t> stop_ids;
  int64_t context = 0;
  std::shared_ptr<DecoderModel> policy, reference;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  int64_t optimizer_steps = 0;
  std::unique_ptr<MetricsLog> metrics;
  std::vector<RolloutRecord> records;
  std::vector<AgentSampleInfo> info;
};

// "step-12" -> 12; -1 otherwise.
int64_t CheckpointStep(const fs::path& dir) {
  const std::string name = dir.filename().string();
  if (name.rfind("step-", 0) != 0) return -1;
  try {
    size_t used = 0;
    const int64_t n = std::stoll(name.substr(5), &used);
    return used == name.size() - 5 ? n : -1;
  } catch (...) {
    return -1;
  }
}

std::vector<int64_t> CompleteCheckpoints(const fs::path& dir) {
  std::vector<int64_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const int64_t n = CheckpointStep(e.path());
    if (n >= 0 && fs::exists(e.path() / "trainer_state.json")) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + ("`" + names[i] + "`");
  return out;
}

}  // namespace

struct MultiAgentTrainer::State {
  GrpoConfig config;
  Options options;
  std::unique_ptr<GrpoTrainer::Impl> im;  // problems, executors, token credit, update
  std::vector<AgentState> agents;
  std::vector<AgentSpec> specs;
  std::unique_ptr<MetricsLog> metrics;
  int64_t step = 0;
  std::vector<JointRecord> joint;
  std::vector<JointTree> trees;
  StepTimings timing;

  // The agent's instruction (placeholders filled) and its revision instruction.
  std::string AgentInstruction(size_t a, const std::vector<std::vector<std::string>>& owned,
                               const datasets::ProblemRecord& p) const;
  std::string AgentRevision(size_t a, const std::vector<std::vector<std::string>>& owned) const;

  // One pending expansion: a group to sample at `turn`, with every agent's conversation.
  struct Pending {
    int tree = 0;
    int parent = -1;  // joint node it expands (-1: the task)
    int turn = 1;
    std::vector<std::vector<ChatMessage>> messages;  // per agent, ending with a user turn
    std::vector<std::vector<int32_t>> prompt_ids;    // per agent
    std::vector<std::string> prompt_text;
  };
  Status BuildPrompts(Pending* p);
  Status Rollout(const std::vector<size_t>& batch);
  StatusOr<std::vector<std::string>> Transition(const Pending& from, const JointRecord& jr,
                                                const std::string& expert_text);
  Status Credit(int64_t n_prompts, std::vector<StepCredit>* sc);
  StatusOr<Scalars> Report(const std::vector<size_t>& batch, const std::vector<StepCredit>& sc,
                           const std::vector<GrpoTrainer::Impl::UpdateStats>& us);

  std::vector<std::vector<int>> group_base;   // [tree-global group id] -> per agent first record
  std::vector<Pending> groups_pending;        // [global group id] the conversations it sampled from
  std::vector<std::pair<int, int>> group_of;  // global group id -> (tree, group in tree)
};

MultiAgentTrainer::MultiAgentTrainer() : s_(std::make_unique<State>()) {}
MultiAgentTrainer::~MultiAgentTrainer() = default;

int64_t MultiAgentTrainer::step() const { return s_->step; }
int64_t MultiAgentTrainer::num_agents() const { return static_cast<int64_t>(s_->agents.size()); }
const std::vector<AgentSpec>& MultiAgentTrainer::agents() const { return s_->specs; }
DecoderModel& MultiAgentTrainer::policy(int64_t agent) {
  return *s_->agents[static_cast<size_t>(agent)].policy;
}
const std::vector<RolloutRecord>& MultiAgentTrainer::last_records(int64_t agent) const {
  return s_->agents[static_cast<size_t>(agent)].records;
}
const std::vector<AgentSampleInfo>& MultiAgentTrainer::last_sample_info(int64_t agent) const {
  return s_->agents[static_cast<size_t>(agent)].info;
}
const std::vector<JointRecord>& MultiAgentTrainer::last_joint() const { return s_->joint; }
const std::vector<JointTree>& MultiAgentTrainer::last_trees() const { return s_->trees; }

// ---- creation ------------------------------------------------------------------------

StatusOr<std::unique_ptr<MultiAgentTrainer>> MultiAgentTrainer::Create(const GrpoConfig& config,
                                                                       Options options) {
  EGCA_RETURN_IF_ERROR(ValidateGrpoConfig(config));
  if (!IsMultiAgent(config)) return InvalidArgument("config key 'multi_agent.agents': required");
  std::unique_ptr<MultiAgentTrainer> t(new MultiAgentTrainer());
  State& s = *t->s_;
  s.config = config;
  s.options = options;
  const GrpoConfig& c = s.config;
  EGCA_ASSIGN_OR_RETURN(s.specs, ParseAgents(c));
  s.im = std::make_unique<GrpoTrainer::Impl>();
  GrpoTrainer::Impl& im = *s.im;
  im.config = c;
  im.distribution =
      options.distribution ? options.distribution : std::make_shared<dist::SingleProcess>();
  const bool writer = im.distribution->is_writer();

  // 1. Checks before writing: every agent's checkpoint and tokenizer, the data, prompts.
  std::vector<ModelConfig> model_configs;
  for (const AgentSpec& spec : s.specs) {
    if (!fs::is_directory(spec.model)) {
      return NotFound(fmt::format(
          "{}: not a checkpoint directory (config key 'multi_agent.agents', agent '{}')",
          spec.model, spec.name));
    }
    EGCA_ASSIGN_OR_RETURN(ModelConfig mc, LoadModelConfig(spec.model + "/config.json"));
    AgentState a;
    a.spec = spec;
    auto tok = Tokenizer::FromFile(spec.model);
    if (!tok.ok()) {
      return Status(tok.status().code(),
                    fmt::format("{} (config key 'multi_agent.agents', agent '{}')",
                                tok.status().message(), spec.name));
    }
    a.tokenizer = std::move(*tok);
    a.stop_ids = DefaultStopTokenIds(*a.tokenizer, mc.eos_token_id);
    a.context = mc.max_position_embeddings;
    s.agents.push_back(std::move(a));
    model_configs.push_back(mc);
  }
  EGCA_ASSIGN_OR_RETURN(im.tokenizer,
                        Tokenizer::FromFile(c.tokenizer.empty() ? s.specs[0].model : c.tokenizer));
  EGCA_ASSIGN_OR_RETURN(im.chat, ChatTemplate::Named(c.chat_template));
  im.stop_ids = s.agents[0].stop_ids;
  im.context = s.agents[0].context;
  EGCA_ASSIGN_OR_RETURN(
      im.train, im.LoadProblemSet(c.train_data, c.train_format, c.train_limit, "data.train"));
  for (const auto& p : im.train) {
    if (p.language != Language::kPython) {
      return InvalidArgument(
          fmt::format("{}: problem {}: cooperating agents join Python functions; {} problems "
                      "are not supported (config key 'data.lang')",
                      p.record.origin, p.record.id, LanguageName(p.language)));
    }
  }
  for (int64_t w = 0; w < c.route_workers; ++w) {
    EGCA_ASSIGN_OR_RETURN(auto router, ProgramRouter::Create(true, false));
    im.routers.push_back(std::move(router));
  }
  im.pool = std::make_unique<RoutePool>(static_cast<int>(c.route_workers));
  const bool exists = fs::exists(c.run_dir);
  if (exists && !options.resume && !options.overwrite) {
    return FailedPrecondition(fmt::format(
        "{}: run directory exists (use --resume to continue it or --overwrite to replace it)",
        c.run_dir));
  }
  if (options.resume && !exists) return NotFound(fmt::format("{}: no run to resume", c.run_dir));
  im.device = c.device == "auto"
                  ? (torch::cuda::is_available() ? at::Device(at::kCUDA) : at::Device(at::kCPU))
                  : at::Device(c.device);
  if (im.device.is_cuda() && !torch::cuda::is_available()) {
    return FailedPrecondition(
        fmt::format("config key 'run.device': {} requested but CUDA is not available", c.device));
  }
  im.dtype = c.dtype == "bfloat16"  ? at::kBFloat16
             : c.dtype == "float32" ? at::kFloat
             : im.device.is_cuda()  ? at::kBFloat16
                                    : at::kFloat;
  if (c.threads > 0) SetComputeThreads(static_cast<int>(c.threads));  // ATen + OpenBLAS

  // 2. Models: each agent its own policy, reference and optimizer (two agents naming one
  //    checkpoint get two copies).
  for (AgentState& a : s.agents) {
    EGCA_ASSIGN_OR_RETURN(a.policy,
                          LoadCheckpoint(a.spec.model, LoadOptions(im.device).set_dtype(im.dtype)));
    if (c.beta > 0) {
      EGCA_ASSIGN_OR_RETURN(
          a.reference, LoadCheckpoint(a.spec.model, LoadOptions(im.device).set_dtype(im.dtype)));
      a.reference->eval();
      for (auto& p : a.reference->parameters()) p.set_requires_grad(false);
    }
    a.optimizer = std::make_unique<MultiTensorAdamW>(a.policy->parameters(),
                                                     torch::optim::AdamWOptions(c.lr)
                                                         .betas({c.adam_beta1, c.adam_beta2})
                                                         .eps(c.adam_eps)
                                                         .weight_decay(c.weight_decay));
  }
  if (c.turns > 1 && c.feedback == "expert_edits") {
    if (!fs::exists(c.expert_model + "/config.json")) {
      return NotFound(fmt::format(
          "{}/config.json: not found (config key 'multi_turn.expert_model')", c.expert_model));
    }
    EGCA_ASSIGN_OR_RETURN(ModelConfig ec, LoadModelConfig(c.expert_model + "/config.json"));
    im.expert_context = ec.max_position_embeddings;
    EGCA_ASSIGN_OR_RETURN(
        im.expert, LoadCheckpoint(c.expert_model, LoadOptions(im.device).set_dtype(im.dtype)));
    im.expert->eval();
  }
  im.source = options.rollouts;

  // 3. The run directory (writer) and resume: the newest step every agent has complete.
  if (writer) {
    if (options.overwrite && exists && !options.resume) egca::RemoveTree(c.run_dir);
    for (const AgentState& a : s.agents)
      fs::create_directories(fs::path(c.run_dir) / "agents" / a.spec.name / "checkpoints");
  }
  int64_t resumed_step = -1;
  if (options.resume) {
    std::vector<int64_t> common;
    for (size_t i = 0; i < s.agents.size(); ++i) {
      auto steps = CompleteCheckpoints(fs::path(c.run_dir) / "agents" / s.agents[i].spec.name /
                                       "checkpoints");
      if (i == 0) {
        common = steps;
      } else {
        std::vector<int64_t> both;
        std::set_intersection(common.begin(), common.end(), steps.begin(), steps.end(),
                              std::back_inserter(both));
        common = both;
      }
    }
    resumed_step = common.empty() ? 0 : common.back();
    if (!common.empty()) {
      for (AgentState& a : s.agents) {
        const fs::path dir = fs::path(c.run_dir) / "agents" / a.spec.name / "checkpoints" /
                             fmt::format("step-{}", resumed_step);
        EGCA_RETURN_IF_ERROR(LoadWeights(*a.policy, dir.string()));
        EGCA_ASSIGN_OR_RETURN(std::string text, ReadFile((dir / "trainer_state.json").string()));
        auto state = nlohmann::json::parse(text, nullptr, false);
        if (state.is_discarded() || !state.contains("optimizer_steps")) {
          return DataLoss(fmt::format("{}/trainer_state.json: malformed", dir.string()));
        }
        a.optimizer_steps = state["optimizer_steps"].get<int64_t>();
        if (fs::exists(dir / "optimizer.pt")) {
          torch::serialize::InputArchive archive;
          archive.load_from((dir / "optimizer.pt").string(), im.device);
          a.optimizer->load(archive);
        }
      }
      s.step = resumed_step;
      std::fprintf(stderr, "egca-train: resumed %s at step %lld (%zu agents)\n", c.run_dir.c_str(),
                   static_cast<long long>(s.step), s.agents.size());
    }
  }
  for (AgentState& a : s.agents) {
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> params = a.policy->parameters();
    EGCA_RETURN_IF_ERROR(im.distribution->BroadcastParameters(params));
  }
  if (writer) {
    EGCA_RETURN_IF_ERROR(WriteFileAtomic(c.run_dir + "/config.yaml", GrpoConfigToYaml(c)));
    EGCA_ASSIGN_OR_RETURN(s.metrics, MetricsLog::Open(c.run_dir, resumed_step));
    for (AgentState& a : s.agents) {
      EGCA_ASSIGN_OR_RETURN(
          a.metrics,
          MetricsLog::Open((fs::path(c.run_dir) / "agents" / a.spec.name).string(), resumed_step));
    }
  }
  return t;
}

// ---- prompts and transitions --------------------------------------------------------------

std::string MultiAgentTrainer::State::AgentInstruction(
    size_t a, const std::vector<std::vector<std::string>>& owned,
    const datasets::ProblemRecord& p) const {
  std::string text = agents[a].spec.instruction;
  std::vector<std::string> others;
  for (size_t j = 0; j < owned.size(); ++j) {
    if (j != a) others.insert(others.end(), owned[j].begin(), owned[j].end());
  }
  if (text.empty()) {
    if (config.ma_environment == "code" && a == 0) {
      text =
          "Write a helper function named `aux` that helps solve the problem below. Another agent "
          "writes "
          "{others} and may call `aux`. Answer with the code of `aux` only, in one ```python "
          "block.";
    } else if (config.ma_environment == "code") {
      text =
          "Write the function {functions} that solves the problem below. A helper function `aux` "
          "is "
          "already defined by another agent: you may call it, but do not define it. Answer in one "
          "```python block.";
    } else {
      text =
          "Write the function(s) {functions} for the problem below; other agents write {others}, "
          "which "
          "you may call but must not define. Answer in one ```python block.";
    }
  }
  text = Replace(text, "{functions}", JoinNames(owned[a]));
  text = Replace(text, "{others}", JoinNames(others));
  text = Replace(text, "{entry_point}", p.entry_point);
  return text;
}

std::string MultiAgentTrainer::State::AgentRevision(
    size_t a, const std::vector<std::vector<std::string>>& owned) const {
  return fmt::format(
      "The joint program above is not correct yet. Write your corrected {} (only your own "
      "function{}) in one "
      "```python block.",
      JoinNames(owned[a]), owned[a].size() > 1 ? "s" : "");
}

Status MultiAgentTrainer::State::BuildPrompts(Pending* p) {
  p->prompt_ids.assign(agents.size(), {});
  p->prompt_text.assign(agents.size(), "");
  for (size_t a = 0; a < agents.size(); ++a) {
    EGCA_ASSIGN_OR_RETURN(p->prompt_text[a],
                          FormatConversation(im->chat, config.system_prompt, p->messages[a]));
    p->prompt_ids[a] = agents[a].tokenizer->EncodeIds(p->prompt_text[a]);
    if (static_cast<int64_t>(p->prompt_ids[a].size()) + config.max_new_tokens > agents[a].context) {
      return InvalidArgument(
          fmt::format("agent '{}': prompt of {} tokens + max_new_tokens exceeds the context of {}",
                      agents[a].spec.name, p->prompt_ids[a].size(), agents[a].context));
    }
  }
  return Status::Ok();
}

// The next turn's user message of every agent after joint response `jr` of group `from`.
StatusOr<std::vector<std::string>> MultiAgentTrainer::State::Transition(
    const Pending& from, const JointRecord& jr, const std::string& expert_text) {
  const TrainProblem& problem = *im->step_problems[static_cast<size_t>(jr.tree)];
  const auto owned = OwnedFunctions(config, specs, problem.record);
  FeedbackOptions fo;
  ParseFeedbackMode(config.feedback, &fo.mode);
  fo.sandbox_slice = config.sandbox_slice;
  fo.max_chars = config.feedback_chars;
  std::string execution;
  if (jr.route_error.empty()) {
    if (jr.route.mode == credit::FailureMode::kConstraint && jr.route.error_span) {
      execution = "The joint program breaks the agents' contract: " + jr.route.reason;
    } else {
      execution = ExecutionFeedback(jr.route, problem.routing.tests, jr.code, fo);
    }
  } else {
    execution = "The joint program could not be graded: " + jr.route_error;
  }
  std::vector<std::string> out(agents.size());
  if (fo.mode == FeedbackMode::kCustom) {
    TransitionHookInput in;
    in.prompt = problem.user_text;
    in.turn = jr.turn;
    in.joint_program = jr.code;
    in.mode = jr.route_error.empty() ? credit::FailureModeName(jr.route.mode) : "ERROR";
    in.r_hat = jr.route_error.empty() ? jr.route.pass_fraction : 0.0;
    in.reward = jr.reward;
    in.execution_feedback = execution;
    for (size_t a = 0; a < agents.size(); ++a) {
      in.agent_names.push_back(agents[a].spec.name);
      in.agent_completions.push_back(
          agents[a].records[static_cast<size_t>(jr.samples[a])].completion);
      std::vector<std::string> ph, rh;
      for (const ChatMessage& m : from.messages[a])
        (m.role == "user" ? ph : rh).push_back(m.content);
      rh.push_back(in.agent_completions.back());
      in.prompt_history.push_back(ph);
      in.response_history.push_back(rh);
    }
    return RunTransitionHook(config.feedback_command, in, config.ma_transition_timeout);
  }
  for (size_t a = 0; a < agents.size(); ++a) {
    std::string feedback;
    switch (fo.mode) {
      case FeedbackMode::kPlain:
        break;
      case FeedbackMode::kLevelFeedback:
        feedback = execution;
        break;
      case FeedbackMode::kEgca:
        feedback = execution;
        if (jr.blamed_agent >= 0) {
          feedback +=
              fmt::format("\nThe earliest point of failure lies in the code of agent '{}'{}.",
                          agents[static_cast<size_t>(jr.blamed_agent)].spec.name,
                          static_cast<size_t>(jr.blamed_agent) == a ? " (yours)" : "");
        }
        break;
      case FeedbackMode::kExpertEdits:
        feedback = "Suggested edits:\n" + expert_text;
        break;
      case FeedbackMode::kCustom:
        break;
    }
    out[a] = RevisionMessage(feedback, AgentRevision(a, owned));
  }
  return out;
}

// ---- rollout ---------------------------------------------------------------------------

Status MultiAgentTrainer::State::Rollout(const std::vector<size_t>& batch) {
  const GrpoConfig& c = config;
  GrpoTrainer::Impl& I = *im;
  const int64_t n_agents = static_cast<int64_t>(agents.size());
  const int64_t g = c.group_size;
  const auto combos = FormJointResponses(c.ma_joint_mode, n_agents, g);
  I.step_problems.clear();
  for (size_t idx : batch) I.step_problems.push_back(&I.train[idx]);
  trees.assign(batch.size(), JointTree{});
  joint.clear();
  group_base.clear();
  groups_pending.clear();
  group_of.clear();
  for (AgentState& a : agents) {
    a.records.clear();
    a.info.clear();
  }
  std::vector<Pending> pending;
  for (size_t p = 0; p < batch.size(); ++p) {
    const TrainProblem& problem = *I.step_problems[p];
    const auto owned = OwnedFunctions(c, specs, problem.record);
    Pending pd;
    pd.tree = static_cast<int>(p);
    pd.messages.resize(agents.size());
    for (size_t a = 0; a < agents.size(); ++a) {
      const std::string user =
          ProblemUserMessage(problem.record, AgentInstruction(a, owned, problem.record));
      pd.messages[a] = {{"user", user}};
    }
    EGCA_RETURN_IF_ERROR(BuildPrompts(&pd));  // a task prompt too long is the config's error
    pending.push_back(std::move(pd));
  }
  for (int64_t turn = 1; turn <= c.turns && !pending.empty(); ++turn) {
    // Sample: every agent, every pending group, G completions.
    const size_t first_group = groups_pending.size();
    for (Pending& pd : pending) {
      JointTree& tree = trees[static_cast<size_t>(pd.tree)];
      JointGroup grp;
      grp.parent = pd.parent;
      grp.turn = static_cast<int>(turn);
      const int gid = static_cast<int>(tree.groups.size());
      if (pd.parent >= 0) tree.nodes[static_cast<size_t>(pd.parent)].child_group = gid;
      tree.groups.push_back(grp);
      group_of.emplace_back(pd.tree, gid);
      group_base.emplace_back();
      groups_pending.push_back(pd);
    }
    for (size_t a = 0; a < agents.size(); ++a) {
      AgentState& ag = agents[a];
      const int64_t n = static_cast<int64_t>(pending.size());
      const int64_t chunk = c.generation_chunk > 0 ? c.generation_chunk : std::max<int64_t>(n, 1);
      for (int64_t first = 0, ci = 0; first < n; first += chunk, ++ci) {
        const int64_t last = std::min(n, first + chunk);
        std::vector<std::vector<int32_t>> prompts;
        std::vector<std::string> ids;
        for (int64_t j = first; j < last; ++j) {
          const Pending& pd = pending[static_cast<size_t>(j)];
          prompts.push_back(pd.prompt_ids[a]);
          const std::string base =
              I.step_problems[static_cast<size_t>(pd.tree)]->record.id + "@" + ag.spec.name;
          ids.push_back(turn == 1 ? base : fmt::format("{}#turn{}", base, turn));
        }
        const uint64_t seed = SplitMix64(
            c.seed ^ SplitMix64((static_cast<uint64_t>(step) << 24) +
                                (static_cast<uint64_t>(turn - 1) << 16) +
                                (static_cast<uint64_t>(a) << 12) + static_cast<uint64_t>(ci)));
        SamplingOptions so;
        so.set_num_samples_per_prompt(g)
            .set_max_new_tokens(c.max_new_tokens)
            .set_temperature(c.temperature)
            .set_top_p(c.top_p)
            .set_top_k(c.top_k)
            .set_seed(seed)
            .set_stop_token_ids(ag.stop_ids)
            .set_stop_strings(c.stop_strings)
            .set_tokenizer(*ag.tokenizer);
        const auto t_gen = Clock::now();
        StatusOr<std::vector<Completion>> completions =
            I.source ? I.source->Sample(*ag.policy, ids, prompts, so)
                     : Generate(*ag.policy, prompts, so);
        timing.generate += Seconds(t_gen);
        if (!completions.ok()) return completions.status();
        const size_t base = ag.records.size();
        ag.records.resize(base + static_cast<size_t>((last - first) * g));
        ag.info.resize(ag.records.size());
        for (int64_t j = first; j < last; ++j) {
          group_base[first_group + static_cast<size_t>(j)].push_back(
              static_cast<int>(base + static_cast<size_t>((j - first) * g)));
        }
        for (Completion& comp : *completions) {
          const Pending& pd = pending[static_cast<size_t>(first + comp.prompt_index)];
          const size_t at = base + static_cast<size_t>(comp.prompt_index * g + comp.sample_index);
          RolloutRecord& r = ag.records[at];
          r.problem_id = I.step_problems[static_cast<size_t>(pd.tree)]->record.id;
          r.group = pd.tree;
          r.sample = comp.sample_index;
          r.turn = turn;
          r.prompt_ids = pd.prompt_ids[a];
          r.prompt_text = pd.prompt_text[a];
          r.finish = comp.finish_reason;
          const int64_t cut = comp.finish_reason == FinishReason::kStopString
                                  ? static_cast<int64_t>(comp.text.size())
                                  : -1;
          auto [text, bytes] = CompletionTokenBytes(*ag.tokenizer, comp.token_ids, cut);
          r.completion = std::move(text);
          r.token_bytes = std::move(bytes);
          r.token_ids = std::move(comp.token_ids);
          r.old_log_probs = std::move(comp.policy_log_probs);
          AgentSampleInfo& info = ag.info[at];
          info.tree = pd.tree;
          info.group =
              group_of[first_group + static_cast<size_t>(first + comp.prompt_index)].second;
          info.member = static_cast<int>(comp.sample_index);
        }
      }
    }
    // Joint responses: formed, joined and routed on the pool.
    const size_t joint_begin = joint.size();
    std::vector<JointProgram> programs;
    for (size_t k = 0; k < pending.size(); ++k) {
      const size_t gg = first_group + k;
      const auto [tree_index, gid] = group_of[gg];
      JointTree& tree = trees[static_cast<size_t>(tree_index)];
      const TrainProblem& problem = *I.step_problems[static_cast<size_t>(tree_index)];
      const auto owned = OwnedFunctions(c, specs, problem.record);
      for (const auto& members : combos) {
        JointNode node;
        node.group = gid;
        node.members = members;
        const int nid = static_cast<int>(tree.nodes.size());
        tree.nodes.push_back(node);
        tree.groups[static_cast<size_t>(gid)].nodes.push_back(nid);
        JointRecord jr;
        jr.tree = tree_index;
        jr.node = nid;
        jr.turn = static_cast<int>(turn);
        jr.parent = pending[k].parent;
        jr.problem_id = problem.record.id;
        std::vector<std::string> texts;
        for (size_t a = 0; a < agents.size(); ++a) {
          jr.samples.push_back(group_base[gg][a] + members[a]);
          texts.push_back(agents[a].records[static_cast<size_t>(jr.samples.back())].completion);
        }
        programs.push_back(BuildJointProgram(problem.record, owned, texts));
        jr.code = programs.back().code;
        joint.push_back(std::move(jr));
      }
    }
    std::mutex mu;
    double busy = 0;
    for (size_t j = joint_begin; j < joint.size(); ++j) {
      JointRecord* jr = &joint[j];
      const JointProgram* jp = &programs[j - joint_begin];
      TrainProblem* problem = I.step_problems[static_cast<size_t>(jr->tree)];
      I.pool->Submit([this, jr, jp, problem, &mu, &busy](int w) {
        const auto t0 = Clock::now();
        if (jp->conflict_span) {
          // A naming conflict is the agents' contract broken: not run, CONSTRAINT, R = 0.
          jr->route.mode = credit::FailureMode::kConstraint;
          jr->route.reason = jp->conflict;
          jr->route.constraints_satisfied = false;
          jr->route.error_span = jp->conflict_span;
        } else {
          auto route =
              im->routers[w]->Route(problem->language, jp->code, problem->routing,
                                    im->SettingsFor(*problem, config.localize), problem->cache);
          if (route.ok()) {
            jr->route = std::move(*route);
          } else {
            jr->route_error = route.status().ToString();
          }
        }
        std::lock_guard<std::mutex> lock(mu);
        busy += Seconds(t0);
      });
    }
    const auto t_wait = Clock::now();
    I.pool->Wait();
    timing.route_wait += Seconds(t_wait);
    timing.route += busy;
    // Rewards and the agent each failure is attributed to.
    for (size_t j = joint_begin; j < joint.size(); ++j) {
      JointRecord& jr = joint[j];
      const JointProgram& jp = programs[j - joint_begin];
      const TrainProblem& problem = *I.step_problems[static_cast<size_t>(jr.tree)];
      if (!jr.route_error.empty()) {
        jr.reward = 0;
      } else if (c.reward == "magrpo_levels") {
        const LevelReward lr = MagrpoLevelReward(
            jp, problem.record.entry_point, jr.route.mode != credit::FailureMode::kSyntax,
            jr.route.pass_fraction, c.ma_level_scale, c.ma_level_shift);
        jr.reward = lr.value;
        jr.reward_terms = lr.terms;
      } else {
        jr.reward = jr.route.reward;
      }
      std::optional<SourceSpan> span;
      if (jr.route_error.empty()) {
        if (jr.route.mode == credit::FailureMode::kLogic) span = jr.route.earliest_divergence;
        if (jr.route.mode == credit::FailureMode::kSyntax ||
            jr.route.mode == credit::FailureMode::kConstraint) {
          span = jr.route.error_span;
        }
      }
      if (span) jr.blamed_agent = AgentOfByte(jp, span->begin_byte);
      trees[static_cast<size_t>(jr.tree)].nodes[static_cast<size_t>(jr.node)].reward = jr.reward;
    }
    // Per-agent credit views, from each group's diagonal joint response (k, ..., k).
    for (size_t k = 0; k < pending.size(); ++k) {
      const size_t gg = first_group + k;
      const auto [tree_index, gid] = group_of[gg];
      const JointGroup& grp =
          trees[static_cast<size_t>(tree_index)].groups[static_cast<size_t>(gid)];
      for (int nid : grp.nodes) {
        const JointNode& node =
            trees[static_cast<size_t>(tree_index)].nodes[static_cast<size_t>(nid)];
        if (std::any_of(node.members.begin(), node.members.end(),
                        [&](int m) { return m != node.members[0]; }))
          continue;
        // Find the joint record of (tree_index, nid).
        const JointRecord* jr = nullptr;
        const JointProgram* jp = nullptr;
        for (size_t q = joint_begin; q < joint.size(); ++q) {
          if (joint[q].tree == tree_index && joint[q].node == nid) {
            jr = &joint[q];
            jp = &programs[q - joint_begin];
            break;
          }
        }
        if (jr == nullptr) return Internal("joint record not found");
        for (size_t a = 0; a < agents.size(); ++a) {
          RolloutRecord& r = agents[a].records[static_cast<size_t>(jr->samples[a])];
          AgentSampleInfo& info = agents[a].info[static_cast<size_t>(jr->samples[a])];
          r.program = jr->code;
          r.route_error = jr->route_error;
          r.route = gates::RouteResult{};
          r.route.mode = jr->route.mode;
          r.route.reason = jr->route.reason;
          r.route.pass_fraction = jr->route.pass_fraction;
          r.route.constraints_satisfied = jr->route.constraints_satisfied;
          r.route.reward = jr->route.reward;
          r.reward = jr->reward;
          r.turn_reward = jr->reward;
          if (!jr->route_error.empty() || jr->route.mode == credit::FailureMode::kCorrect) continue;
          const std::optional<SourceSpan> span = jr->route.mode == credit::FailureMode::kLogic
                                                     ? jr->route.earliest_divergence
                                                     : jr->route.error_span;
          if (!span) continue;  // not localized: every agent uniform
          if (jr->blamed_agent == static_cast<int>(a)) {
            info.blame = "self";
            auto moved = [&](const std::optional<SourceSpan>& s) -> std::optional<SourceSpan> {
              return s ? SpanInAgentCompletion(*jp, static_cast<int>(a), *s) : std::nullopt;
            };
            if (jr->route.mode == credit::FailureMode::kLogic) {
              r.route.earliest_divergence = moved(jr->route.earliest_divergence);
              r.route.last_divergence = moved(jr->route.last_divergence);
              r.route.random_boundary = moved(jr->route.random_boundary);
              r.route.divergence_kind = jr->route.divergence_kind;
              r.route.localization_confidence = jr->route.localization_confidence;
            } else {
              // SYNTAX, and a naming conflict (CONSTRAINT with a span): the span's tokens,
              // as the credit operator treats a syntax error.
              r.route.mode = credit::FailureMode::kSyntax;
              r.route.error_span = moved(jr->route.error_span);
            }
          } else {
            info.blame = jr->blamed_agent < 0 ? "imports" : "other";
            // Not this agent's bytes: uniform over its tokens, or nothing.
            r.route.mode = credit::FailureMode::kCorrect;
            info.credit_none = config.ma_other_credit == "none" && jr->blamed_agent >= 0;
          }
        }
      }
      // Cross mode: an agent's completion is in several joint responses; every record
      // still gets the (mean) reward of the joint responses it is in, for the dumps.
      if (c.ma_joint_mode == "cross") {
        for (size_t a = 0; a < agents.size(); ++a) {
          for (int64_t m = 0; m < g; ++m) {
            double sum = 0, n = 0;
            for (int nid : grp.nodes) {
              const JointNode& node =
                  trees[static_cast<size_t>(tree_index)].nodes[static_cast<size_t>(nid)];
              if (node.members[a] == m) sum += node.reward, n += 1;
            }
            RolloutRecord& r = agents[a].records[static_cast<size_t>(group_base[gg][a] + m)];
            r.turn_reward = n > 0 ? sum / n : 0;
          }
        }
      }
    }
    if (turn == c.turns) break;
    // Expansion: every joint response of a group that did not terminate early gets the
    // transition's prompts.
    const auto t_feedback = Clock::now();
    std::vector<Pending> next;
    std::vector<size_t> expandable;
    for (size_t k = 0; k < pending.size(); ++k) {
      const size_t gg = first_group + k;
      const auto [tree_index, gid] = group_of[gg];
      const JointGroup& grp =
          trees[static_cast<size_t>(tree_index)].groups[static_cast<size_t>(gid)];
      double mean = 0;
      for (int nid : grp.nodes)
        mean += trees[static_cast<size_t>(tree_index)].nodes[static_cast<size_t>(nid)].reward;
      mean /= static_cast<double>(std::max<size_t>(grp.nodes.size(), 1));
      const bool stop = c.ma_early_termination > 0 && mean >= c.ma_early_termination;
      for (size_t q = joint_begin; q < joint.size(); ++q) {
        if (joint[q].tree != tree_index || trees[static_cast<size_t>(tree_index)]
                                                   .nodes[static_cast<size_t>(joint[q].node)]
                                                   .group != gid)
          continue;
        if (stop) {
          joint[q].not_expanded =
              fmt::format("early termination: the node's mean reward {:.4g} >= {:.4g}", mean,
                          c.ma_early_termination);
        } else {
          expandable.push_back(q);
        }
      }
    }
    std::vector<std::string> proposals(expandable.size());
    if (c.feedback == "expert_edits" && !expandable.empty()) {
      // The expert reads each joint program as one candidate (GrpoTrainer::Impl's prompt).
      std::vector<RolloutRecord> tmp(expandable.size());
      std::vector<size_t> which;
      for (size_t e = 0; e < expandable.size(); ++e) {
        const JointRecord& jr = joint[expandable[e]];
        tmp[e].group = jr.tree;
        tmp[e].program = jr.code;
        tmp[e].route = jr.route;
        tmp[e].route_error = jr.route_error;
        which.push_back(e);
      }
      EGCA_ASSIGN_OR_RETURN(proposals, I.ExpertProposals(tmp, which, step * 64 + turn));
    }
    for (size_t e = 0; e < expandable.size(); ++e) {
      JointRecord& jr = joint[expandable[e]];
      const size_t gg = [&] {
        for (size_t q = first_group; q < group_of.size(); ++q) {
          if (group_of[q].first == jr.tree &&
              group_of[q].second ==
                  trees[static_cast<size_t>(jr.tree)].nodes[static_cast<size_t>(jr.node)].group)
            return q;
        }
        return first_group;
      }();
      const Pending& from = groups_pending[gg];
      auto users = Transition(from, jr, proposals[e]);
      auto skip = [&](const std::string& why) {
        jr.not_expanded = why;
        std::fprintf(
            stderr, "egca-train: step %lld: %s: joint node %d (turn %d) not expanded: %s\n",
            static_cast<long long>(step + 1), jr.problem_id.c_str(), jr.node, jr.turn, why.c_str());
      };
      if (!users.ok()) {
        skip(users.status().message());
        continue;
      }
      Pending pd;
      pd.tree = jr.tree;
      pd.parent = jr.node;
      pd.turn = static_cast<int>(turn + 1);
      pd.messages = from.messages;
      for (size_t a = 0; a < agents.size(); ++a) {
        pd.messages[a].push_back(
            {"assistant", agents[a].records[static_cast<size_t>(jr.samples[a])].completion});
        pd.messages[a].push_back({"user", (*users)[a]});
      }
      if (Status st = BuildPrompts(&pd); !st.ok()) {
        skip(st.message());
        continue;
      }
      jr.expanded = true;
      next.push_back(std::move(pd));
    }
    timing.feedback += Seconds(t_feedback);
    pending = std::move(next);
  }
  return Status::Ok();
}

// ---- credit ---------------------------------------------------------------------------

Status MultiAgentTrainer::State::Credit(int64_t n_prompts, std::vector<StepCredit>* sc) {
  const GrpoConfig& c = config;
  const int64_t g = c.group_size;
  JointCreditOptions o;
  o.backup = c.ma_backup;
  o.gamma = c.ma_gamma;
  o.advantage = c.ma_advantage;
  o.zscore = c.ma_zscore;
  for (JointTree& tree : trees)
    EGCA_RETURN_IF_ERROR(CreditJointTree(&tree, static_cast<int64_t>(agents.size()), g, o));
  (void)n_prompts;
  sc->assign(agents.size(), StepCredit{});
  for (size_t gg = 0; gg < group_of.size(); ++gg) {
    const auto [tree_index, gid] = group_of[gg];
    const JointGroup& grp = trees[static_cast<size_t>(tree_index)].groups[static_cast<size_t>(gid)];
    for (size_t a = 0; a < agents.size(); ++a) {
      StepCredit& s = (*sc)[a];
      std::vector<double> rets = grp.agent_return[a];
      const auto stats = credit::ComputeGroupStats(rets);
      ++s.groups_total;
      if (stats.all_equal) ++s.zero_variance_groups;
      s.group_reward_std.push_back(stats.std);
      for (int64_t k = 0; k < g; ++k) {
        const size_t idx = static_cast<size_t>(group_base[gg][a] + k);
        RolloutRecord& r = agents[a].records[idx];
        r.credited_reward = grp.agent_return[a][static_cast<size_t>(k)];
        r.advantage = grp.agent_advantage[a][static_cast<size_t>(k)];
        r.loss_weight = 1.0 / static_cast<double>(g);
        r.retained = true;
        r.node = idx;
      }
    }
  }
  for (size_t a = 0; a < agents.size(); ++a) {
    for (size_t i = 0; i < agents[a].records.size(); ++i) (*sc)[a].train.push_back(i);
    EGCA_RETURN_IF_ERROR(
        im->AssignTokenCredit(step * 131 + static_cast<int64_t>(a), &agents[a].records, &(*sc)[a]));
    for (size_t i = 0; i < agents[a].records.size(); ++i) {
      if (agents[a].info[i].credit_none) {
        std::fill(agents[a].records[i].credit.advantages.begin(),
                  agents[a].records[i].credit.advantages.end(), 0.0);
      }
    }
  }
  return Status::Ok();
}

// ---- step ------------------------------------------------------------------------------

StatusOr<Scalars> MultiAgentTrainer::Step() {
  State& s = *s_;
  GrpoTrainer::Impl& im = *s.im;
  const auto t_step = Clock::now();
  s.timing = StepTimings{};
  const std::vector<size_t> batch = im.LocalProblemsOfStep(s.step);
  const int64_t n_prompts = static_cast<int64_t>(batch.size());
  im.PrepareReferences(batch);
  EGCA_RETURN_IF_ERROR(s.Rollout(batch));
  const auto t_credit = Clock::now();
  std::vector<StepCredit> sc;
  EGCA_RETURN_IF_ERROR(s.Credit(n_prompts, &sc));
  s.timing.credit = Seconds(t_credit);
  const auto t_update = Clock::now();
  EGCA_ASSIGN_OR_RETURN(const int64_t batch_trees, im.SumOverRanks(n_prompts));
  std::vector<GrpoTrainer::Impl::UpdateStats> us(s.agents.size());
  for (size_t a = 0; a < s.agents.size(); ++a) {
    AgentState& ag = s.agents[a];
    // The shared update with this agent's optimizer, reference and step count.
    std::swap(im.optimizer, ag.optimizer);
    im.reference = ag.reference;
    im.optimizer_steps = ag.optimizer_steps;
    Status st = im.UpdatePolicy(*ag.policy, ag.records, sc[a].train, batch_trees, /*weighted=*/true,
                                &us[a]);
    ag.optimizer_steps = im.optimizer_steps;
    std::swap(im.optimizer, ag.optimizer);
    im.reference.reset();
    EGCA_RETURN_IF_ERROR(st);
  }
  s.timing.update = Seconds(t_update);
  ++s.step;
  s.timing.total = Seconds(t_step);
  return s.Report(batch, sc, us);
}

StatusOr<Scalars> MultiAgentTrainer::State::Report(
    const std::vector<size_t>& batch, const std::vector<StepCredit>& sc,
    const std::vector<GrpoTrainer::Impl::UpdateStats>& us) {
  const GrpoConfig& c = config;
  const bool writer = im->distribution->is_writer();
  const size_t n = agents.size();
  // Counters summed over ranks: per turn (joint responses, reward sum, passed), leaves,
  // expansions, early terminations, skipped expansions, blame per agent (+ imports), trees.
  const size_t T = static_cast<size_t>(c.turns);
  std::vector<double> v(3 * T + 5 + n + 1, 0.0);
  for (const JointRecord& jr : joint) {
    const size_t t = static_cast<size_t>(jr.turn - 1);
    v[3 * t] += 1;
    v[3 * t + 1] += jr.reward;
    v[3 * t + 2] +=
        jr.route_error.empty() && jr.route.mode == credit::FailureMode::kCorrect ? 1 : 0;
    const JointNode& node = trees[static_cast<size_t>(jr.tree)].nodes[static_cast<size_t>(jr.node)];
    v[3 * T] += node.child_group < 0 ? 1 : 0;  // leaves
    v[3 * T + 1] += jr.expanded ? 1 : 0;
    v[3 * T + 2] += jr.not_expanded.rfind("early termination", 0) == 0 ? 1 : 0;
    v[3 * T + 3] +=
        !jr.not_expanded.empty() && jr.not_expanded.rfind("early termination", 0) != 0 ? 1 : 0;
    if (jr.route_error.empty() && jr.route.mode != credit::FailureMode::kCorrect) {
      if (jr.blamed_agent >= 0)
        v[3 * T + 5 + static_cast<size_t>(jr.blamed_agent)] += 1;
      else
        v[3 * T + 5 + n] += 1;
    }
  }
  v[3 * T + 4] = static_cast<double>(batch.size());
  EGCA_RETURN_IF_ERROR(im->distribution->SumScalars(&v));
  Scalars m;
  const double trees_n = std::max(1.0, v[3 * T + 4]);
  double total = 0;
  for (size_t t = 0; t < T; ++t) {
    const double cnt = v[3 * t];
    total += cnt;
    m[fmt::format("joint/responses_turn{}", t + 1)] = cnt / trees_n;
    m[fmt::format("joint/reward_turn{}", t + 1)] = cnt > 0 ? v[3 * t + 1] / cnt : 0;
    m[fmt::format("joint/pass_rate_turn{}", t + 1)] = cnt > 0 ? v[3 * t + 2] / cnt : 0;
  }
  m["joint/reward"] = v[0] > 0 ? v[1] / v[0] : 0;
  m["joint/responses"] = total / trees_n;
  m["joint/leaves"] = v[3 * T] / trees_n;
  m["joint/expanded"] = v[3 * T + 1] / trees_n;
  m["joint/early_terminated"] = v[3 * T + 2] / trees_n;
  m["joint/expansions_skipped"] = v[3 * T + 3];
  double failures = 0;
  for (size_t a = 0; a <= n; ++a) failures += v[3 * T + 5 + a];
  for (size_t a = 0; a < n; ++a) {
    m[fmt::format("blame/{}", agents[a].spec.name)] =
        failures > 0 ? v[3 * T + 5 + a] / failures : 0;
  }
  m["blame/imports_or_unlocalized"] = failures > 0 ? v[3 * T + 5 + n] / failures : 0;
  m["time/generate"] = timing.generate;
  m["time/route"] = timing.route;
  m["time/route_wait"] = timing.route_wait;
  m["time/feedback"] = timing.feedback;
  m["time/credit"] = timing.credit;
  m["time/update"] = timing.update;
  m["time/step"] = timing.total;
  std::vector<Scalars> per(n);
  for (size_t a = 0; a < n; ++a) {
    const AgentState& ag = agents[a];
    std::vector<double> w = {0, 0, 0, 0,
                             0, 0, 0};  // samples, tokens, return sum, |A| sum, self, other, none
    for (size_t i = 0; i < ag.records.size(); ++i) {
      w[0] += 1;
      w[1] += static_cast<double>(ag.records[i].token_ids.size());
      w[2] += ag.records[i].credited_reward;
      w[3] += std::abs(ag.records[i].advantage);
      w[4] += ag.info[i].blame == "self" ? 1 : 0;
      w[5] += ag.info[i].blame == "other" || ag.info[i].blame == "imports" ? 1 : 0;
      w[6] += ag.info[i].credit_none ? 1 : 0;
    }
    EGCA_RETURN_IF_ERROR(im->distribution->SumScalars(&w));
    Scalars& p = per[a];
    p["loss"] = us[a].loss;
    p["kl"] = us[a].kl;
    p["grad_norm"] = us[a].grad_norm;
    p["learning_rate"] = us[a].lr;
    p["clip_ratio/low_mean"] = us[a].clip_low;
    p["clip_ratio/high_mean"] = us[a].clip_high;
    p["entropy"] = us[a].entropy;
    p["samples"] = w[0];
    p["completions/mean_length"] = w[0] > 0 ? w[1] / w[0] : 0;
    p["return"] = w[0] > 0 ? w[2] / w[0] : 0;
    p["advantage_abs"] = w[0] > 0 ? w[3] / w[0] : 0;
    p["credit/self_blamed"] = w[0] > 0 ? w[4] / w[0] : 0;
    p["credit/other_blamed"] = w[0] > 0 ? w[5] / w[0] : 0;
    p["credit/none"] = w[0] > 0 ? w[6] / w[0] : 0;
    p["credit/zero_variance_groups"] = sc[a].groups_total > 0
                                           ? static_cast<double>(sc[a].zero_variance_groups) /
                                                 static_cast<double>(sc[a].groups_total)
                                           : 0;
    for (const auto& [k, val] : p) m[fmt::format("agent/{}/{}", ag.spec.name, k)] = val;
  }
  if (!writer) return m;
  EGCA_RETURN_IF_ERROR(metrics->Log(step, "train", m));
  for (size_t a = 0; a < n; ++a)
    EGCA_RETURN_IF_ERROR(agents[a].metrics->Log(step, "train", per[a]));
  if (c.dump_trees) {
    fs::create_directories(fs::path(c.run_dir) / "trees");
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const JointRecord& jr : joint) {
      const JointNode& node =
          trees[static_cast<size_t>(jr.tree)].nodes[static_cast<size_t>(jr.node)];
      nlohmann::ordered_json j;
      j["problem_id"] = jr.problem_id;
      j["node"] = jr.node;
      j["parent"] = jr.parent;
      j["turn"] = jr.turn;
      j["members"] = node.members;
      j["r"] = jr.reward;
      j["R"] = node.ret;
      j["mode"] = jr.route_error.empty() ? credit::FailureModeName(jr.route.mode) : "ERROR";
      j["reason"] = jr.route_error.empty() ? jr.route.reason : jr.route_error;
      j["reward_terms"] = jr.reward_terms;
      j["blamed_agent"] =
          jr.blamed_agent >= 0 ? agents[static_cast<size_t>(jr.blamed_agent)].spec.name : "";
      j["expanded"] = jr.expanded;
      j["not_expanded"] = jr.not_expanded;
      j["program"] = jr.code;
      all.push_back(j);
    }
    EGCA_RETURN_IF_ERROR(
        WriteFileAtomic(fmt::format("{}/trees/step-{}.json", c.run_dir, step),
                        all.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  }
  if (c.dump_rollouts) {
    fs::create_directories(fs::path(c.run_dir) / "rollouts");
    std::string out;
    for (size_t a = 0; a < n; ++a) {
      for (size_t i = 0; i < agents[a].records.size(); ++i) {
        const RolloutRecord& r = agents[a].records[i];
        nlohmann::ordered_json j;
        j["agent"] = agents[a].spec.name;
        j["problem_id"] = r.problem_id;
        j["turn"] = r.turn;
        j["group"] = agents[a].info[i].group;
        j["sample"] = r.sample;
        j["prompt"] = r.prompt_text;
        j["completion"] = r.completion;
        j["return"] = r.credited_reward;
        j["advantage"] = r.advantage;
        j["blame"] = agents[a].info[i].blame;
        out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      }
    }
    EGCA_RETURN_IF_ERROR(
        WriteFileAtomic(fmt::format("{}/rollouts/step-{}.jsonl", c.run_dir, step), out));
  }
  if (options.progress) {
    std::string agents_text;
    for (size_t a = 0; a < n; ++a) {
      agents_text += fmt::format(" | {} loss {:.4f} blame {:.2f}", agents[a].spec.name, us[a].loss,
                                 m[fmt::format("blame/{}", agents[a].spec.name)]);
    }
    std::fprintf(stderr,
                 "egca-train: step %lld/%lld | joint reward %.3f | pass@turn1 %.3f | %.0f joint "
                 "responses%s | %.1f s\n",
                 static_cast<long long>(step), static_cast<long long>(c.steps), m["joint/reward"],
                 m["joint/pass_rate_turn1"], total, agents_text.c_str(), timing.total);
  }
  return m;
}

// ---- checkpoints -------------------------------------------------------------------------

Status MultiAgentTrainer::SaveCheckpoint() {
  State& s = *s_;
  GrpoTrainer::Impl& im = *s.im;
  const GrpoConfig& c = s.config;
  if (!im.distribution->is_writer()) return im.distribution->Barrier();
  for (AgentState& a : s.agents) {
    const fs::path root = fs::path(c.run_dir) / "agents" / a.spec.name / "checkpoints";
    const fs::path final_dir = root / fmt::format("step-{}", s.step);
    const fs::path tmp = root / fmt::format(".tmp-step-{}-{}", s.step, getpid());
    std::error_code ec;
    egca::RemoveTree(tmp, ec);
    EGCA_RETURN_IF_ERROR(trainer::SaveCheckpoint(*a.policy, tmp.string(),
                                                 SaveOptions().set_dtype(a.policy->dtype())));
    {
      torch::serialize::OutputArchive archive;
      a.optimizer->save(archive);
      archive.save_to((tmp / "optimizer.pt").string());
    }
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
      if (fs::exists(fs::path(a.spec.model) / f)) {
        fs::copy_file(fs::path(a.spec.model) / f, tmp / f, fs::copy_options::overwrite_existing,
                      ec);
      }
    }
    nlohmann::ordered_json state;
    state["step"] = s.step;
    state["agent"] = a.spec.name;
    state["optimizer_steps"] = a.optimizer_steps;
    state["seed"] = c.seed;
    state["data_position"] = s.step * c.prompts_per_step;
    state["learning_rate"] =
        ScheduledLearningRate(c.lr, a.optimizer_steps, c.warmup_steps, c.steps * c.mu, c.lr_decay);
    EGCA_RETURN_IF_ERROR(
        WriteFileAtomic((tmp / "trainer_state.json").string(), state.dump(2) + "\n"));
    egca::RemoveTree(final_dir, ec);
    fs::rename(tmp, final_dir, ec);
    if (ec)
      return DataLoss(
          fmt::format("{}: cannot rename into place: {}", final_dir.string(), ec.message()));
    if (c.keep_checkpoints > 0) {
      auto all = CompleteCheckpoints(root);
      for (size_t i = 0; i + static_cast<size_t>(c.keep_checkpoints) < all.size(); ++i) {
        egca::RemoveTree(root / fmt::format("step-{}", all[i]), ec);
      }
    }
  }
  return im.distribution->Barrier();
}

Status MultiAgentTrainer::Train() {
  const GrpoConfig& c = s_->config;
  while (s_->step < c.steps) {
    EGCA_RETURN_IF_ERROR(Step().status());
    if ((c.save_every > 0 && s_->step % c.save_every == 0) || s_->step == c.steps) {
      EGCA_RETURN_IF_ERROR(SaveCheckpoint());
    }
  }
  return Status::Ok();
}

}  // namespace egca::trainer
