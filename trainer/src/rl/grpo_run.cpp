// A run's life: GrpoTrainer::Create (every check before anything is written, the models,
// resume from the latest complete checkpoint), Train (steps, evaluation, checkpoints) and
// SaveCheckpoint (atomic: a killed save leaves the previous one).
#include "grpo_trainer_impl.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/serialize.h>
#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/core/remove_tree.h"
#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/policy/cpu_runtime.h"
#include "egca/trainer/rl/adamw.h"

namespace egca::trainer {

namespace {

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

// Completed checkpoints (those with trainer_state.json, written last), ascending by step.
std::vector<std::pair<int64_t, fs::path>> ListCheckpoints(const std::string& run_dir) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(run_dir) / "checkpoints", ec)) {
    const int64_t n = CheckpointStep(e.path());
    if (n >= 0 && fs::exists(e.path() / "trainer_state.json")) out.emplace_back(n, e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

// ---- creation ------------------------------------------------------------------------

GrpoTrainer::GrpoTrainer(GrpoConfig config, Options options)
    : config_(std::move(config)), options_(std::move(options)), impl_(std::make_unique<Impl>()) {
  impl_->config = config_;
}

GrpoTrainer::~GrpoTrainer() = default;

StatusOr<std::unique_ptr<GrpoTrainer>> GrpoTrainer::Create(const GrpoConfig& config,
                                                           Options options) {
  EGCA_RETURN_IF_ERROR(ValidateGrpoConfig(config));
  std::unique_ptr<GrpoTrainer> t(new GrpoTrainer(config, options));
  Impl& im = *t->impl_;
  const GrpoConfig& c = t->config_;
  im.distribution =
      options.distribution ? options.distribution : std::make_shared<dist::SingleProcess>();
  const bool writer = im.distribution->is_writer();

  // 1. Everything that can be checked without writing: model files, tokenizer, template,
  //    data and prompt lengths, the run directory.
  const std::string model_config = c.model + "/config.json";
  if (!fs::is_directory(c.model)) {
    return NotFound(fmt::format("{}: not a checkpoint directory (config key 'model')", c.model));
  }
  EGCA_ASSIGN_OR_RETURN(ModelConfig mc, LoadModelConfig(model_config));
  const std::string ref_dir = c.reference_model.empty() ? c.model : c.reference_model;
  if (c.beta > 0 && !fs::exists(ref_dir + "/config.json")) {
    return NotFound(
        fmt::format("{}/config.json: not found (config key 'reference_model')", ref_dir));
  }
  const std::string tok_path = c.tokenizer.empty() ? c.model : c.tokenizer;
  auto tok = Tokenizer::FromFile(tok_path);
  if (!tok.ok()) {
    return Status(tok.status().code(), fmt::format("{} (config key '{}')", tok.status().message(),
                                                   c.tokenizer.empty() ? "model" : "tokenizer"));
  }
  im.tokenizer = std::move(*tok);
  EGCA_ASSIGN_OR_RETURN(im.chat, ChatTemplate::Named(c.chat_template));
  im.stop_ids = DefaultStopTokenIds(*im.tokenizer, mc.eos_token_id);
  EGCA_ASSIGN_OR_RETURN(
      im.train, im.LoadProblemSet(c.train_data, c.train_format, c.train_limit, "data.train"));
  if (!c.eval_data.empty()) {
    EGCA_ASSIGN_OR_RETURN(im.eval,
                          im.LoadProblemSet(c.eval_data, c.eval_format, c.eval_limit, "data.eval"));
  }
  // One router per worker with the executors of the languages the problems use, before any
  // model is loaded. Their servers are programs of their own (exec mode), so a candidate's
  // process holds nothing of this one (expected outputs, reference solutions, weights).
  bool any_python = false, any_cpp = false;
  for (const auto* set : {&im.train, &im.eval}) {
    for (const auto& p : *set) (p.language == Language::kCpp ? any_cpp : any_python) = true;
  }
  for (int64_t w = 0; w < c.route_workers; ++w) {
    EGCA_ASSIGN_OR_RETURN(auto router, ProgramRouter::Create(any_python, any_cpp));
    im.routers.push_back(std::move(router));
  }
  im.pool = std::make_unique<RoutePool>(static_cast<int>(c.route_workers));
  const int64_t context = mc.max_position_embeddings;
  im.context = context;
  for (const auto* set : {&im.train, &im.eval}) {
    for (const auto& p : *set) {
      const int64_t need = static_cast<int64_t>(p.prompt_ids.size()) +
                           std::max(c.max_new_tokens, c.eval_max_new_tokens);
      if (need > context) {
        return InvalidArgument(
            fmt::format("{}: problem {}: prompt ({} tokens) + max_new_tokens exceeds the model's "
                        "context of {} tokens",
                        p.record.origin, p.record.id, p.prompt_ids.size(), context));
      }
    }
  }
  const bool exists = fs::exists(c.run_dir);
  if (exists && !options.resume && !options.overwrite) {
    return FailedPrecondition(fmt::format(
        "{}: run directory exists (use --resume to continue it or --overwrite to replace it)",
        c.run_dir));
  }
  if (options.resume && !exists) {
    return NotFound(fmt::format("{}: no run to resume", c.run_dir));
  }
  im.device = c.device == "auto"
                  ? (torch::cuda::is_available() ? at::Device(at::kCUDA) : at::Device(at::kCPU))
                  : at::Device(c.device);
  if (im.device.is_cuda() && !torch::cuda::is_available()) {
    return FailedPrecondition(
        fmt::format("config key 'run.device': {} requested but CUDA is not available", c.device));
  }
  im.dtype = c.dtype == "bfloat16"  ? at::kBFloat16
             : c.dtype == "float32" ? at::kFloat
             : c.dtype == "float64" ? at::kDouble
             : im.device.is_cuda()  ? at::kBFloat16
                                    : at::kFloat;
  if (c.threads > 0) SetComputeThreads(static_cast<int>(c.threads));  // ATen + OpenBLAS

  // 2. Models.
  EGCA_ASSIGN_OR_RETURN(t->policy_,
                        LoadCheckpoint(c.model, LoadOptions(im.device).set_dtype(im.dtype)));
  if (c.beta > 0) {
    EGCA_ASSIGN_OR_RETURN(im.reference,
                          LoadCheckpoint(ref_dir, LoadOptions(im.device).set_dtype(im.dtype)));
    im.reference->eval();
    for (auto& p : im.reference->parameters()) p.set_requires_grad(false);
  }
  if (c.turns > 1 && c.feedback == "expert_edits") {
    if (!fs::exists(c.expert_model + "/config.json")) {
      return NotFound(fmt::format(
          "{}/config.json: not found (config key 'multi_turn.expert_model')", c.expert_model));
    }
    EGCA_ASSIGN_OR_RETURN(ModelConfig ec, LoadModelConfig(c.expert_model + "/config.json"));
    if (ec.vocab_size != mc.vocab_size) {
      return InvalidArgument(
          fmt::format("{}: vocabulary of {} tokens, the policy's tokenizer has {} (config key "
                      "'multi_turn.expert_model')",
                      c.expert_model, ec.vocab_size, mc.vocab_size));
    }
    im.expert_context = ec.max_position_embeddings;
    EGCA_ASSIGN_OR_RETURN(
        im.expert, LoadCheckpoint(c.expert_model, LoadOptions(im.device).set_dtype(im.dtype)));
    im.expert->eval();
  }
  im.optimizer = std::make_unique<MultiTensorAdamW>(t->policy_->parameters(),
                                                     torch::optim::AdamWOptions(c.lr)
                                                         .betas({c.adam_beta1, c.adam_beta2})
                                                         .eps(c.adam_eps)
                                                         .weight_decay(c.weight_decay));
  im.source = options.rollouts;

  int64_t resumed_step = -1;
  // Every rank has checked the run directory before the writer creates or replaces it.
  EGCA_RETURN_IF_ERROR(im.distribution->Barrier());
  // 4. The run directory (written by the writer only; every rank reads the checkpoint).
  if (writer) {
    if (options.overwrite && exists && !options.resume) egca::RemoveTree(c.run_dir);
    fs::create_directories(fs::path(c.run_dir) / "checkpoints");
  }
  if (options.resume) {
    const auto checkpoints = ListCheckpoints(c.run_dir);
    if (!checkpoints.empty()) {
      const fs::path& dir = checkpoints.back().second;
      EGCA_RETURN_IF_ERROR(LoadWeights(*t->policy_, dir.string()));
      EGCA_ASSIGN_OR_RETURN(std::string state_text,
                            ReadFile((dir / "trainer_state.json").string()));
      auto state = nlohmann::json::parse(state_text, nullptr, false);
      if (state.is_discarded() || !state.contains("step") || !state.contains("optimizer_steps")) {
        return DataLoss(fmt::format("{}/trainer_state.json: malformed", dir.string()));
      }
      t->step_ = state["step"].get<int64_t>();
      im.optimizer_steps = state["optimizer_steps"].get<int64_t>();
      if (fs::exists(dir / "optimizer.pt")) {
        torch::serialize::InputArchive archive;
        archive.load_from((dir / "optimizer.pt").string(), im.device);
        im.optimizer->load(archive);
      }
      resumed_step = t->step_;
      // A checkpoint holds the one replica every rank shares and the global data position,
      // so any world size resumes it (docs/training.md); only the order of the gradient
      // sums changes.
      const int64_t saved_world = state.value("world_size", int64_t{1});
      if (writer) {
        std::fprintf(stderr, "egca-train: resumed %s at step %lld%s\n", dir.string().c_str(),
                     static_cast<long long>(t->step_),
                     saved_world != im.distribution->world_size()
                         ? fmt::format(" (saved by {} ranks, resumed by {})", saved_world,
                                       im.distribution->world_size())
                               .c_str()
                         : "");
      }
    } else {
      resumed_step = 0;
    }
  }
  // Every replica starts from the writer's weights (one process: nothing to do).
  {
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> params = t->policy_->parameters();
    EGCA_RETURN_IF_ERROR(im.distribution->BroadcastParameters(params));
  }
  if (writer) {
    EGCA_RETURN_IF_ERROR(WriteFileAtomic(c.run_dir + "/config.yaml", GrpoConfigToYaml(c)));
    EGCA_ASSIGN_OR_RETURN(im.metrics, MetricsLog::Open(c.run_dir, resumed_step));
  }
  return t;
}

// ---- checkpoints -------------------------------------------------------------------------

Status GrpoTrainer::SaveCheckpoint() {
  Impl& im = *impl_;
  const GrpoConfig& c = config_;
  // One writer; the others wait for it so that none runs ahead of a checkpoint.
  if (!im.distribution->is_writer()) return im.distribution->Barrier();
  const fs::path root = fs::path(c.run_dir) / "checkpoints";
  const fs::path final_dir = root / fmt::format("step-{}", step_);
  const fs::path tmp = root / fmt::format(".tmp-step-{}-{}", step_, getpid());
  std::error_code ec;
  egca::RemoveTree(tmp, ec);
  // The training dtype, so that resuming continues from exactly these weights.
  EGCA_RETURN_IF_ERROR(
      trainer::SaveCheckpoint(*policy_, tmp.string(), SaveOptions().set_dtype(policy_->dtype())));
  {
    torch::serialize::OutputArchive archive;
    im.optimizer->save(archive);
    archive.save_to((tmp / "optimizer.pt").string());
  }
  // Tokenizer files beside the weights: the directory is a complete HF checkpoint.
  const fs::path tok_src = c.tokenizer.empty() ? fs::path(c.model) : fs::path(c.tokenizer);
  const fs::path tok_dir = fs::is_directory(tok_src) ? tok_src : tok_src.parent_path();
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
    if (fs::exists(tok_dir / f))
      fs::copy_file(tok_dir / f, tmp / f, fs::copy_options::overwrite_existing, ec);
  }
  nlohmann::ordered_json state;
  state["step"] = step_;
  state["optimizer_steps"] = im.optimizer_steps;
  state["world_size"] = im.distribution->world_size();
  state["seed"] = c.seed;
  state["data_position"] = step_ * c.prompts_per_step;
  state["epoch"] = (step_ * c.prompts_per_step) / static_cast<int64_t>(im.train.size());
  state["learning_rate"] =
      ScheduledLearningRate(c.lr, im.optimizer_steps, c.warmup_steps, c.steps * c.mu, c.lr_decay);
  // Written last: a directory without it is an incomplete save and is never resumed from.
  EGCA_RETURN_IF_ERROR(
      WriteFileAtomic((tmp / "trainer_state.json").string(), state.dump(2) + "\n"));
  egca::RemoveTree(final_dir, ec);
  fs::rename(tmp, final_dir, ec);
  if (ec)
    return DataLoss(
        fmt::format("{}: cannot rename into place: {}", final_dir.string(), ec.message()));
  if (c.keep_checkpoints > 0) {
    auto all = ListCheckpoints(c.run_dir);
    for (size_t i = 0; i + static_cast<size_t>(c.keep_checkpoints) < all.size(); ++i)
      egca::RemoveTree(all[i].second, ec);
  }
  return im.distribution->Barrier();
}

Status GrpoTrainer::Train() {
  const GrpoConfig& c = config_;
  while (step_ < c.steps) {
    EGCA_ASSIGN_OR_RETURN(Scalars m, Step());
    (void)m;
    // Data parallelism: every replica must still hold the same weights.
    if (c.check_every > 0 && step_ % c.check_every == 0) {
      EGCA_RETURN_IF_ERROR(impl_->distribution->CheckReplicas(policy_->parameters(), step_));
    }
    // The last step is always evaluated (when evaluation is on) so a run ends with its
    // final score even when steps is not a multiple of eval_every.
    if (c.eval_every > 0 && !impl_->eval.empty() &&
        (step_ % c.eval_every == 0 || step_ == c.steps)) {
      // The writer evaluates (on the whole evaluation set); the others wait.
      if (impl_->distribution->is_writer()) EGCA_RETURN_IF_ERROR(Evaluate().status());
      EGCA_RETURN_IF_ERROR(impl_->distribution->Barrier());
    }
    if ((c.save_every > 0 && step_ % c.save_every == 0) || step_ == c.steps) {
      EGCA_RETURN_IF_ERROR(SaveCheckpoint());
    }
  }
  return Status::Ok();
}

}  // namespace egca::trainer
