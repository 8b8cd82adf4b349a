#include "egca/trainer/grpo_trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>

#include "egca/core/files.h"
#include "egca/core/mix.h"
#include "egca/credit/grpo.h"
#include "egca/credit/pass_at_k.h"
#include "egca/datasets/datasets.h"
#include "egca/datasets/samples.h"
#include "egca/gates/constraints.h"
#include "egca/trainer/chat_template.h"
#include "egca/trainer/checkpoint.h"
#include "egca/trainer/grpo_loss.h"

namespace egca::trainer {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// A problem ready for training: its record, what the router needs, its prompt's tokens and
// the reference cache shared by every sample of it across steps.
struct TrainProblem {
  datasets::ProblemRecord record;
  gates::Problem routing;
  std::string prompt_text;
  std::vector<int32_t> prompt_ids;
  std::shared_ptr<gates::ReferenceCache> cache = std::make_shared<gates::ReferenceCache>();
  bool reference_prepared = false;
};

// route.workers threads, each owning one executor; jobs receive their worker's index.
class RoutePool {
 public:
  explicit RoutePool(int workers) {
    for (int w = 0; w < workers; ++w) threads_.emplace_back([this, w] { Loop(w); });
  }
  ~RoutePool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void Submit(std::function<void(int)> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(job));
      ++pending_;
    }
    cv_.notify_one();
  }
  // Blocks until every submitted job has finished.
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  void Loop(int worker) {
    for (;;) {
      std::function<void(int)> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        if (stop_ && jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job(worker);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (--pending_ == 0) idle_.notify_all();
      }
    }
  }
  std::mutex mu_;
  std::condition_variable cv_, idle_;
  std::deque<std::function<void(int)>> jobs_;
  int64_t pending_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

std::string SpanJson(const std::optional<SourceSpan>& span) {
  if (!span) return "null";
  return fmt::format(R"({{"begin":{},"end":{},"line":{},"end_line":{}}})", span->begin_byte,
                     span->end_byte, span->begin.line, span->end.line);
}

// A span of the program moved into completion bytes (nullopt when it lies in text no token
// produced, e.g. a prompt prefix).
std::optional<SourceSpan> ToCompletionSpan(const std::optional<SourceSpan>& span,
                                           const datasets::SampleProgram& program) {
  if (!span) return std::nullopt;
  const int64_t b = program.ToCompletionByte(span->begin_byte);
  const int64_t e = program.ToCompletionByte(span->end_byte);
  if (b < 0 || e < 0) return std::nullopt;
  SourceSpan out = *span;
  out.begin_byte = static_cast<uint32_t>(b);
  out.end_byte = static_cast<uint32_t>(std::max(b, e));
  return out;
}

credit::LocalizationTarget TargetOf(const std::string& name) {
  if (name == "last") return credit::LocalizationTarget::kLastDivergence;
  if (name == "random") return credit::LocalizationTarget::kRandomExecutedBoundary;
  if (name == "uniform") return credit::LocalizationTarget::kUniform;
  return credit::LocalizationTarget::kEarliestDivergence;
}

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

double ScheduledLearningRate(double peak, int64_t step, int64_t warmup, int64_t total, bool decay) {
  if (warmup > 0 && step < warmup) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (!decay || total <= warmup) return peak;
  const double left = static_cast<double>(total - step) / static_cast<double>(total - warmup);
  return peak * std::clamp(left, 0.0, 1.0);
}

std::pair<std::string, std::vector<credit::TokenByteRange>> CompletionTokenBytes(
    const Tokenizer& tokenizer, const std::vector<int32_t>& ids, int64_t cut) {
  // The streaming decoder holds back the bytes of an incomplete UTF-8 character, so a
  // character split across tokens lands on the token that completes it and every range
  // indexes the decoded text exactly.
  DecodeStream stream(tokenizer, /*skip_special=*/true);
  std::string text;
  std::vector<credit::TokenByteRange> ranges(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto begin = static_cast<uint32_t>(text.size());
    text += stream.Next(ids[i]);
    ranges[i] = {begin, static_cast<uint32_t>(text.size())};
  }
  const std::string tail = stream.Flush();
  if (!tail.empty() && !ranges.empty()) {
    text += tail;
    ranges.back().end = static_cast<uint32_t>(text.size());
  }
  if (cut >= 0 && static_cast<size_t>(cut) < text.size()) {
    text.resize(static_cast<size_t>(cut));
    for (auto& r : ranges) {
      r.begin = std::min<uint32_t>(r.begin, static_cast<uint32_t>(cut));
      r.end = std::min<uint32_t>(r.end, static_cast<uint32_t>(cut));
    }
  }
  return {std::move(text), std::move(ranges)};
}

StatusOr<std::vector<Completion>> FixedRolloutSource::Sample(
    DecoderModel& policy, const std::vector<std::string>& problem_ids,
    const std::vector<std::vector<int32_t>>& prompts, const SamplingOptions& options) {
  std::vector<Completion> out;
  std::vector<std::vector<int32_t>> score_prompts, score_completions;
  EncodeOptions no_special;
  no_special.parse_special_tokens = false;
  for (size_t p = 0; p < prompts.size(); ++p) {
    auto it = texts_.find(problem_ids[p]);
    if (it == texts_.end() || it->second.empty()) {
      return NotFound(fmt::format("fixed rollouts: no completion for problem {}", problem_ids[p]));
    }
    for (int64_t g = 0; g < options.num_samples_per_prompt; ++g) {
      Completion c;
      c.prompt_index = static_cast<int64_t>(p);
      c.sample_index = g;
      c.text = it->second[static_cast<size_t>(g) % it->second.size()];
      c.token_ids = tokenizer_.EncodeIds(c.text, no_special);
      if (static_cast<int64_t>(c.token_ids.size()) > options.max_new_tokens) {
        c.token_ids.resize(static_cast<size_t>(options.max_new_tokens));
        c.text = tokenizer_.Decode(c.token_ids, true);
        c.finish_reason = FinishReason::kMaxTokens;
      } else {
        c.finish_reason = FinishReason::kStopToken;
      }
      score_prompts.push_back(prompts[p]);
      score_completions.push_back(c.token_ids);
      out.push_back(std::move(c));
    }
  }
  // Scored a few at a time: the completion positions' [n, L, V] logits are the peak.
  at::NoGradGuard no_grad;
  constexpr size_t kChunk = 4;
  for (size_t b = 0; b < out.size(); b += kChunk) {
    const size_t e = std::min(out.size(), b + kChunk);
    CompletionLogProbs lp = policy.ScoreCompletions(
        {score_prompts.begin() + b, score_prompts.begin() + e},
        {score_completions.begin() + b, score_completions.begin() + e});
    at::Tensor cpu = lp.log_probs.to(at::kCPU).contiguous();
    auto a = cpu.accessor<float, 2>();
    for (size_t i = b; i < e; ++i) {
      out[i].policy_log_probs.resize(out[i].token_ids.size());
      out[i].sampling_log_probs.assign(out[i].token_ids.size(), 0.0f);
      for (size_t t = 0; t < out[i].token_ids.size(); ++t) out[i].policy_log_probs[t] = a[static_cast<int64_t>(i - b)][static_cast<int64_t>(t)];
    }
  }
  return out;
}

// ---- GrpoTrainer::Impl -----------------------------------------------------------------

struct GrpoTrainer::Impl {
  GrpoConfig config;
  std::unique_ptr<Tokenizer> tokenizer;
  ChatTemplate chat = ChatTemplate::Qwen3();
  std::vector<TrainProblem> train, eval;
  std::vector<std::unique_ptr<tracer::Executor>> executors;
  std::unique_ptr<RoutePool> pool;
  std::shared_ptr<DecoderModel> reference;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::unique_ptr<MetricsLog> metrics;
  std::shared_ptr<RolloutSource> source;
  at::Device device = at::kCPU;
  at::ScalarType dtype = at::kFloat;
  std::vector<int32_t> stop_ids;
  int64_t optimizer_steps = 0;
  Clock::time_point started = Clock::now();
  int64_t steps_this_session = 0;

  gates::RouterOptions RouterOptionsFor(const TrainProblem& p, bool localize) const {
    gates::RouterOptions o;
    o.run.limits.wall_seconds = config.timeout_seconds;
    o.run.limits.cpu_seconds = config.timeout_seconds;
    o.run.limits.memory_bytes = static_cast<uint64_t>(config.memory_mb) << 20;
    o.run.apps_import_header = p.record.apps_conventions;
    o.localize = localize;
    o.check_comparability = config.check_comparability;
    o.runtime_error_is_logic = config.runtime_error_is_logic;
    return o;
  }

  // Problems of a file, with their prompts; bad ones reported and skipped.
  StatusOr<std::vector<TrainProblem>> LoadProblemSet(const std::string& path, const std::string& format,
                                                     int64_t limit, const char* key) {
    datasets::DatasetOptions o;
    EGCA_ASSIGN_OR_RETURN(o.format, datasets::ParseDatasetFormat(format));
    o.id_prefix = config.id_prefix;
    o.limit = limit;
    for (const auto& f : config.fields) EGCA_RETURN_IF_ERROR(datasets::SetAppsPlusField(&o.apps_plus, f));
    if (!fs::exists(path)) return NotFound(fmt::format("{}: no such file or directory (config key '{}')", path, key));
    datasets::LoadReport report;
    EGCA_ASSIGN_OR_RETURN(auto records, datasets::LoadProblems(path, o, &report));
    for (const auto& b : report.bad) std::fprintf(stderr, "egca-train: skipped %s\n", b.ToString().c_str());
    std::vector<TrainProblem> out;
    for (auto& r : records) {
      if (r.references.empty()) {
        std::fprintf(stderr, "egca-train: skipped %s: problem %s has no reference solution\n",
                     r.origin.c_str(), r.id.c_str());
        continue;
      }
      TrainProblem p;
      p.routing.reference = r.references.front();
      p.routing.tests = r.tests;
      std::vector<gates::ConstraintSpec> specs;
      if (config.extract_constraints) {
        auto extracted = gates::ExtractConstraints(p.routing.reference, {}, r.prompt);
        if (extracted.ok()) {
          specs = *extracted;
          EGCA_ASSIGN_OR_RETURN(p.routing.constraints, gates::MakeConstraintSet(specs));
        }
      }
      std::string user = config.instruction.empty() ? "" : config.instruction + "\n\n";
      user += r.prompt;
      if (!r.starter_code.empty()) user += "\n\nStart from this code:\n```python\n" + r.starter_code + "\n```";
      if (config.constraints_in_prompt && !specs.empty()) user += "\n\n" + gates::PromptSuffix(specs);
      std::vector<ChatMessage> messages;
      if (!config.system_prompt.empty()) messages.push_back({"system", config.system_prompt});
      messages.push_back({"user", user});
      ChatFormatOptions fo;
      fo.add_generation_prompt = true;
      fo.enable_thinking = false;
      EGCA_ASSIGN_OR_RETURN(auto formatted, chat.Apply(messages, fo));
      p.prompt_text = formatted.text;
      p.prompt_ids = tokenizer->EncodeIds(p.prompt_text);
      if (static_cast<int64_t>(p.prompt_ids.size()) > config.max_prompt_tokens) {
        return InvalidArgument(fmt::format(
            "{}: problem {}: prompt of {} tokens is longer than prompt.max_tokens = {}", r.origin, r.id,
            p.prompt_ids.size(), config.max_prompt_tokens));
      }
      p.record = std::move(r);
      out.push_back(std::move(p));
    }
    if (out.empty()) return InvalidArgument(fmt::format("{}: no usable problem (config key '{}')", path, key));
    return out;
  }

  // Problem indices of step `step`: the concatenation of per-epoch shuffles of the set.
  std::vector<size_t> ProblemsOfStep(int64_t step) const {
    const size_t n = train.size();
    const int64_t per = config.prompts_per_step;
    std::vector<size_t> out;
    int64_t cached_epoch = -1;
    std::vector<size_t> order;
    for (int64_t k = step * per; k < (step + 1) * per; ++k) {
      const int64_t epoch = k / static_cast<int64_t>(n);
      if (epoch != cached_epoch) {
        order.resize(n);
        std::iota(order.begin(), order.end(), 0);
        if (config.shuffle) {
          std::mt19937_64 rng(SplitMix64(config.seed ^ SplitMix64(static_cast<uint64_t>(epoch) + 1)));
          // Fisher-Yates with the generator's raw output: std::shuffle's use of the engine
          // is not specified, so the order would differ between standard libraries.
          for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
        }
        cached_epoch = epoch;
      }
      out.push_back(order[static_cast<size_t>(k % static_cast<int64_t>(n))]);
    }
    return out;
  }

  SamplingOptions Sampling(uint64_t seed, int64_t g, double temperature, double top_p,
                           int64_t max_new) const {
    SamplingOptions s;
    s.set_num_samples_per_prompt(g).set_max_new_tokens(max_new).set_temperature(temperature)
        .set_top_p(top_p).set_top_k(config.top_k).set_seed(seed).set_stop_token_ids(stop_ids)
        .set_stop_strings(config.stop_strings).set_tokenizer(*tokenizer);
    return s;
  }

  // Fills a record from a completion and routes it (in a pool worker).
  void RouteRecord(int worker, TrainProblem& problem, RolloutRecord* r, bool localize) {
    datasets::Sample sample;
    sample.problem_id = problem.record.id;
    sample.completion = r->completion;
    const datasets::SampleProgram program = datasets::ProgramOf(sample, problem.record);
    r->program = program.code;
    r->code_offset = program.offset;
    gates::Router router(executors[worker].get(), RouterOptionsFor(problem, localize), problem.cache);
    auto route = router.Route(program.code, problem.routing);
    if (!route.ok()) {
      r->route_error = route.status().ToString();
      return;
    }
    r->route = std::move(*route);
    // Spans into completion bytes, where the credit operator needs them.
    r->route.error_span = ToCompletionSpan(r->route.error_span, program);
    r->route.earliest_divergence = ToCompletionSpan(r->route.earliest_divergence, program);
    r->route.last_divergence = ToCompletionSpan(r->route.last_divergence, program);
    r->route.random_boundary = ToCompletionSpan(r->route.random_boundary, program);
    r->reward = r->route.reward;
  }
};

// ---- creation ------------------------------------------------------------------------

GrpoTrainer::GrpoTrainer(GrpoConfig config, Options options)
    : config_(std::move(config)), options_(std::move(options)), impl_(std::make_unique<Impl>()) {
  impl_->config = config_;
}

GrpoTrainer::~GrpoTrainer() = default;

StatusOr<std::unique_ptr<GrpoTrainer>> GrpoTrainer::Create(const GrpoConfig& config, Options options) {
  EGCA_RETURN_IF_ERROR(ValidateGrpoConfig(config));
  std::unique_ptr<GrpoTrainer> t(new GrpoTrainer(config, options));
  Impl& im = *t->impl_;
  const GrpoConfig& c = t->config_;

  // 1. Everything that can be checked without writing: model files, tokenizer, template,
  //    data and prompt lengths, the run directory.
  const std::string model_config = c.model + "/config.json";
  if (!fs::is_directory(c.model)) {
    return NotFound(fmt::format("{}: not a checkpoint directory (config key 'model')", c.model));
  }
  EGCA_ASSIGN_OR_RETURN(ModelConfig mc, LoadModelConfig(model_config));
  const std::string ref_dir = c.reference_model.empty() ? c.model : c.reference_model;
  if (c.beta > 0 && !fs::exists(ref_dir + "/config.json")) {
    return NotFound(fmt::format("{}/config.json: not found (config key 'reference_model')", ref_dir));
  }
  const std::string tok_path = c.tokenizer.empty() ? c.model : c.tokenizer;
  auto tok = Tokenizer::FromFile(tok_path);
  if (!tok.ok()) {
    return Status(tok.status().code(),
                  fmt::format("{} (config key '{}')", tok.status().message(), c.tokenizer.empty() ? "model" : "tokenizer"));
  }
  im.tokenizer = std::move(*tok);
  if (c.chat_template == "qwen3") {
    im.chat = ChatTemplate::Qwen3();
  } else if (c.chat_template == "chatml") {
    im.chat = ChatTemplate::ChatML();
  } else {
    EGCA_ASSIGN_OR_RETURN(im.chat, ChatTemplate::FromJsonFile(c.chat_template));
  }
  for (const char* stop : {"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>"}) {
    if (auto id = im.tokenizer->TokenId(stop)) im.stop_ids.push_back(*id);
  }
  if (mc.eos_token_id >= 0 &&
      std::find(im.stop_ids.begin(), im.stop_ids.end(), mc.eos_token_id) == im.stop_ids.end()) {
    im.stop_ids.push_back(static_cast<int32_t>(mc.eos_token_id));
  }
  EGCA_ASSIGN_OR_RETURN(im.train, im.LoadProblemSet(c.train_data, c.train_format, c.train_limit, "data.train"));
  if (!c.eval_data.empty()) {
    EGCA_ASSIGN_OR_RETURN(im.eval, im.LoadProblemSet(c.eval_data, c.eval_format, c.eval_limit, "data.eval"));
  }
  const int64_t context = mc.max_position_embeddings;
  for (const auto* set : {&im.train, &im.eval}) {
    for (const auto& p : *set) {
      const int64_t need = static_cast<int64_t>(p.prompt_ids.size()) + std::max(c.max_new_tokens, c.eval_max_new_tokens);
      if (need > context) {
        return InvalidArgument(fmt::format(
            "{}: problem {}: prompt ({} tokens) + max_new_tokens exceeds the model's context of {} tokens",
            p.record.origin, p.record.id, p.prompt_ids.size(), context));
      }
    }
  }
  const bool exists = fs::exists(c.run_dir);
  if (exists && !options.resume && !options.overwrite) {
    return FailedPrecondition(fmt::format(
        "{}: run directory exists (use --resume to continue it or --overwrite to replace it)", c.run_dir));
  }
  if (options.resume && !exists) {
    return NotFound(fmt::format("{}: no run to resume", c.run_dir));
  }
  im.device = c.device == "auto" ? (torch::cuda::is_available() ? at::Device(at::kCUDA) : at::Device(at::kCPU))
                                 : at::Device(c.device);
  if (im.device.is_cuda() && !torch::cuda::is_available()) {
    return FailedPrecondition(fmt::format("config key 'run.device': {} requested but CUDA is not available", c.device));
  }
  im.dtype = c.dtype == "bfloat16" ? at::kBFloat16
             : c.dtype == "float32" ? at::kFloat
             : im.device.is_cuda()  ? at::kBFloat16
                                    : at::kFloat;
  if (c.threads > 0) at::set_num_threads(static_cast<int>(c.threads));

  // 2. Executors before any model: each sandboxed run forks a server forked from this
  //    process, whose cost grows with our resident memory.
  for (int64_t w = 0; w < c.route_workers; ++w) {
    EGCA_ASSIGN_OR_RETURN(auto executor, tracer::Executor::Create({}));
    im.executors.push_back(std::move(executor));
  }
  im.pool = std::make_unique<RoutePool>(static_cast<int>(c.route_workers));

  // 3. Models.
  EGCA_ASSIGN_OR_RETURN(t->policy_, LoadCheckpoint(c.model, LoadOptions(im.device).set_dtype(im.dtype)));
  if (c.beta > 0) {
    EGCA_ASSIGN_OR_RETURN(im.reference, LoadCheckpoint(ref_dir, LoadOptions(im.device).set_dtype(im.dtype)));
    im.reference->eval();
    for (auto& p : im.reference->parameters()) p.set_requires_grad(false);
  }
  im.optimizer = std::make_unique<torch::optim::AdamW>(
      t->policy_->parameters(), torch::optim::AdamWOptions(c.lr)
                                    .betas({c.adam_beta1, c.adam_beta2})
                                    .eps(c.adam_eps)
                                    .weight_decay(c.weight_decay));
  im.source = options.rollouts;

  // 4. The run directory.
  int64_t resumed_step = -1;
  if (options.overwrite && exists && !options.resume) fs::remove_all(c.run_dir);
  fs::create_directories(fs::path(c.run_dir) / "checkpoints");
  if (options.resume) {
    const auto checkpoints = ListCheckpoints(c.run_dir);
    if (!checkpoints.empty()) {
      const fs::path& dir = checkpoints.back().second;
      EGCA_RETURN_IF_ERROR(LoadWeights(*t->policy_, dir.string()));
      EGCA_ASSIGN_OR_RETURN(std::string state_text, ReadFile((dir / "trainer_state.json").string()));
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
      std::fprintf(stderr, "egca-train: resumed %s at step %lld\n", dir.string().c_str(),
                   static_cast<long long>(t->step_));
    } else {
      resumed_step = 0;
    }
  }
  EGCA_RETURN_IF_ERROR(WriteFileAtomic(c.run_dir + "/config.yaml", GrpoConfigToYaml(c)));
  EGCA_ASSIGN_OR_RETURN(im.metrics, MetricsLog::Open(c.run_dir, resumed_step));
  return t;
}

// ---- one step ---------------------------------------------------------------------------

StatusOr<Scalars> GrpoTrainer::Step() {
  Impl& im = *impl_;
  const GrpoConfig& c = config_;
  const auto t_step = Clock::now();
  StepTimings timing;
  const int64_t g = c.group_size;

  // 1. Prompts.
  const std::vector<size_t> batch = im.ProblemsOfStep(step_);
  const int64_t n_prompts = static_cast<int64_t>(batch.size());
  rollouts_.assign(static_cast<size_t>(n_prompts * g), RolloutRecord{});
  if (c.prepare_reference && c.localize) {
    for (size_t idx : batch) {
      TrainProblem& p = im.train[idx];
      if (p.reference_prepared) continue;
      p.reference_prepared = true;
      im.pool->Submit([&im, &p](int w) {
        gates::Router router(im.executors[w].get(), im.RouterOptionsFor(p, true), p.cache);
        (void)router.PrepareReference(p.routing);  // optional: routing computes what it lacks
      });
    }
  }

  // 2 + 3. Rollout in chunks; each chunk's samples are routed while the next generates.
  const int64_t chunk = c.generation_chunk > 0 ? c.generation_chunk : n_prompts;
  const auto t_route_start = Clock::now();
  std::mutex route_mu;
  double route_busy = 0;
  for (int64_t first = 0, chunk_index = 0; first < n_prompts; first += chunk, ++chunk_index) {
    const int64_t last = std::min(n_prompts, first + chunk);
    std::vector<std::vector<int32_t>> prompts;
    std::vector<std::string> ids;
    for (int64_t p = first; p < last; ++p) {
      prompts.push_back(im.train[batch[p]].prompt_ids);
      ids.push_back(im.train[batch[p]].record.id);
    }
    const uint64_t seed = SplitMix64(c.seed ^ SplitMix64((static_cast<uint64_t>(step_) << 20) + chunk_index));
    SamplingOptions so = im.Sampling(seed, g, c.temperature, c.top_p, c.max_new_tokens);
    const auto t_gen = Clock::now();
    StatusOr<std::vector<Completion>> completions =
        im.source ? im.source->Sample(*policy_, ids, prompts, so) : Generate(*policy_, prompts, so);
    timing.generate += Seconds(t_gen);
    if (!completions.ok()) {
      im.pool->Wait();
      return completions.status();
    }
    for (Completion& comp : *completions) {
      const int64_t group = first + comp.prompt_index;
      RolloutRecord& r = rollouts_[static_cast<size_t>(group * g + comp.sample_index)];
      r.problem_id = im.train[batch[group]].record.id;
      r.group = group;
      r.sample = comp.sample_index;
      r.finish = comp.finish_reason;
      const int64_t cut = comp.finish_reason == FinishReason::kStopString
                              ? static_cast<int64_t>(comp.text.size()) : -1;
      auto [text, bytes] = CompletionTokenBytes(*im.tokenizer, comp.token_ids, cut);
      r.completion = std::move(text);
      r.token_bytes = std::move(bytes);
      r.token_ids = std::move(comp.token_ids);
      r.old_log_probs = std::move(comp.policy_log_probs);
      TrainProblem* problem = &im.train[batch[group]];
      const bool localize = c.localize;
      im.pool->Submit([&im, problem, &r, localize, &route_mu, &route_busy](int w) {
        const auto t0 = Clock::now();
        im.RouteRecord(w, *problem, &r, localize);
        std::lock_guard<std::mutex> lock(route_mu);
        route_busy += Seconds(t0);
      });
    }
  }
  const auto t_wait = Clock::now();
  im.pool->Wait();
  timing.route_wait = Seconds(t_wait);
  timing.route = route_busy;
  (void)t_route_start;

  // Group advantages over the samples routed without an egca error (those keep A = 0).
  const auto t_credit = Clock::now();
  const credit::GroupAdvantageOptions adv_options{
      c.normalization == "mean_std" ? credit::AdvantageNormalization::kMeanStd
                                    : credit::AdvantageNormalization::kMeanCentered};
  int64_t zero_variance_groups = 0;
  std::vector<double> group_reward_std;
  for (int64_t grp = 0; grp < n_prompts; ++grp) {
    std::vector<double> rewards;
    std::vector<RolloutRecord*> members;
    for (int64_t s = 0; s < g; ++s) {
      RolloutRecord& r = rollouts_[static_cast<size_t>(grp * g + s)];
      if (!r.route_error.empty()) continue;
      rewards.push_back(r.reward);
      members.push_back(&r);
    }
    const auto stats = credit::ComputeGroupStats(rewards);
    if (stats.all_equal) ++zero_variance_groups;
    group_reward_std.push_back(stats.std);
    const auto adv = credit::GroupAdvantages(rewards, adv_options);
    for (size_t k = 0; k < members.size(); ++k) members[k]->advantage = adv[k];
  }

  // 4. Token credit.
  credit::TokenCreditOptions co;
  co.target = TargetOf(c.target);
  co.soft_weight = c.soft_weight;
  co.seed = SplitMix64(c.seed ^ static_cast<uint64_t>(step_));
  credit::TokenCreditStats cstats;
  double span_fraction_sum = 0;
  int64_t span_fraction_n = 0;
  for (size_t i = 0; i < rollouts_.size(); ++i) {
    RolloutRecord& r = rollouts_[i];
    credit::CreditSample s;
    s.mode = r.route_error.empty() ? r.route.mode : credit::FailureMode::kCorrect;
    s.advantage = r.advantage;
    s.token_bytes = r.token_bytes;
    s.code_offset = 0;  // spans were moved into completion bytes when routed
    s.error_span = r.route.error_span;
    s.earliest_divergence = r.route.earliest_divergence;
    s.last_divergence = r.route.last_divergence;
    s.random_boundary = r.route.random_boundary;
    s.sample_index = i;
    EGCA_RETURN_IF_ERROR(credit::AssignTokenCreditInto(s, co, &r.credit, &cstats));
    if (r.credit.placement == credit::CreditPlacement::kLocalized && !r.token_ids.empty()) {
      span_fraction_sum += static_cast<double>(r.credit.span_token_count) / static_cast<double>(r.token_ids.size());
      ++span_fraction_n;
    }
  }
  timing.credit = Seconds(t_credit);

  // 5. Update: mu passes of AdamW, micro-batches accumulating the batch's gradient.
  const auto t_update = Clock::now();
  const int64_t n = static_cast<int64_t>(rollouts_.size());
  size_t max_len = 1;
  for (const auto& r : rollouts_) max_len = std::max(max_len, r.token_ids.size());
  std::vector<credit::TokenCredit> credits;
  credits.reserve(rollouts_.size());
  for (const auto& r : rollouts_) credits.push_back(r.credit);
  const std::vector<float> packed = credit::PackTokenAdvantages(credits, max_len);
  const at::Tensor all_adv = at::from_blob(const_cast<float*>(packed.data()),
                                           {n, static_cast<int64_t>(max_len)}, at::kFloat).clone();  // [N, L]
  at::Tensor all_old = at::zeros({n, static_cast<int64_t>(max_len)}, at::kFloat);                       // [N, L]
  {
    auto a = all_old.accessor<float, 2>();
    for (int64_t i = 0; i < n; ++i) {
      const auto& lp = rollouts_[static_cast<size_t>(i)].old_log_probs;
      for (size_t t = 0; t < lp.size() && t < max_len; ++t) a[i][static_cast<int64_t>(t)] = lp[t];
    }
  }
  struct MicroBatch {
    int64_t begin, end;
    std::vector<std::vector<int32_t>> prompts, completions;
    at::Tensor ref;  // [mb, L_mb] or undefined
  };
  std::vector<MicroBatch> micro;
  for (int64_t b = 0; b < n; b += c.micro_batch) {
    MicroBatch m{b, std::min(n, b + c.micro_batch), {}, {}, {}};
    for (int64_t i = m.begin; i < m.end; ++i) {
      const auto& r = rollouts_[static_cast<size_t>(i)];
      m.prompts.push_back(im.train[batch[r.group]].prompt_ids);
      m.completions.push_back(r.token_ids);
    }
    if (im.reference) {
      at::NoGradGuard no_grad;
      m.ref = im.reference->ScoreCompletions(m.prompts, m.completions).log_probs;
    }
    micro.push_back(std::move(m));
  }
  GrpoLossOptions lo;
  lo.eps_low = c.eps_low;
  lo.eps_high = c.eps_high;
  lo.beta = c.beta;
  lo.batch_samples = n;
  double loss_sum = 0, kl_sum = 0, clip_low_sum = 0, clip_high_sum = 0, entropy_sum = 0, grad_norm = 0;
  double ratio_max = 0;
  int64_t stat_tokens = 0, entropy_tokens = 0;
  policy_->train();
  const int64_t total_optimizer_steps = c.steps * c.mu;
  double lr_now = 0;
  for (int64_t pass = 0; pass < c.mu; ++pass) {
    im.optimizer->zero_grad();
    double pass_loss = 0;
    for (const MicroBatch& m : micro) {
      CompletionLogProbs out = policy_->ScoreCompletions(m.prompts, m.completions, /*want_entropy=*/pass == 0);
      const int64_t len = out.log_probs.size(1);
      const at::Tensor adv = all_adv.slice(0, m.begin, m.end).slice(1, 0, len).to(im.device);
      const at::Tensor old = all_old.slice(0, m.begin, m.end).slice(1, 0, len).to(im.device);
      GrpoLossStats ls;
      at::Tensor loss = GrpoLoss(out.log_probs, old, m.ref, adv, out.mask, lo, &ls);
      loss.backward();
      pass_loss += ls.loss;
      if (pass == 0) {
        kl_sum += ls.kl * static_cast<double>(ls.tokens);
        clip_low_sum += ls.clip_low * static_cast<double>(ls.tokens);
        clip_high_sum += ls.clip_high * static_cast<double>(ls.tokens);
        stat_tokens += ls.tokens;
        if (out.entropy.defined()) {
          entropy_sum += out.entropy.sum().item<double>();
          entropy_tokens += static_cast<int64_t>(out.mask.sum().item<double>());
        }
      } else {
        ratio_max = std::max(ratio_max, ls.ratio_max);
      }
    }
    if (pass == 0) loss_sum = pass_loss;
    std::vector<at::Tensor> params;
    for (auto& p : policy_->parameters()) {
      if (p.grad().defined()) params.push_back(p);
    }
    grad_norm = c.grad_clip > 0
                    ? torch::nn::utils::clip_grad_norm_(params, c.grad_clip)
                    : torch::nn::utils::clip_grad_norm_(params, std::numeric_limits<double>::infinity());
    lr_now = ScheduledLearningRate(c.lr, im.optimizer_steps, c.warmup_steps, total_optimizer_steps, c.lr_decay);
    for (auto& group : im.optimizer->param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr_now);
    }
    im.optimizer->step();
    ++im.optimizer_steps;
  }
  if (im.device.is_cuda()) torch::cuda::synchronize();
  timing.update = Seconds(t_update);
  ++step_;
  ++im.steps_this_session;
  timing.total = Seconds(t_step);
  timings_ = timing;

  // 6. Metrics (names as TRL's where the meaning is the same).
  Scalars m;
  std::vector<double> rewards;
  int64_t modes[4] = {0, 0, 0, 0}, route_errors = 0, truncated = 0, tokens = 0, max_tokens = 0, passed_all = 0;
  int64_t logic = 0, logic_localized = 0;
  for (const auto& r : rollouts_) {
    rewards.push_back(r.reward);
    tokens += static_cast<int64_t>(r.token_ids.size());
    max_tokens = std::max<int64_t>(max_tokens, static_cast<int64_t>(r.token_ids.size()));
    if (r.finish == FinishReason::kMaxTokens) ++truncated;
    if (!r.route_error.empty()) {
      ++route_errors;
      continue;
    }
    ++modes[static_cast<int>(r.route.mode)];
    if (r.route.grading.all_passed()) ++passed_all;
    if (r.route.mode == credit::FailureMode::kLogic) {
      ++logic;
      if (r.route.earliest_divergence) ++logic_localized;
    }
  }
  const auto rs = credit::ComputeGroupStats(rewards);
  const double nn = static_cast<double>(n);
  m["reward"] = rs.mean;
  m["reward_std"] = rs.std;
  m["reward_std_in_group"] = group_reward_std.empty() ? 0.0
      : std::accumulate(group_reward_std.begin(), group_reward_std.end(), 0.0) / static_cast<double>(group_reward_std.size());
  m["frac_reward_zero_std"] = static_cast<double>(zero_variance_groups) / static_cast<double>(n_prompts);
  m["pass_all_tests"] = static_cast<double>(passed_all) / nn;
  for (int k = 0; k < 4; ++k) {
    std::string name = credit::FailureModeName(static_cast<credit::FailureMode>(k));
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    m["mode/" + name] = static_cast<double>(modes[k]) / nn;
  }
  m["route_errors"] = static_cast<double>(route_errors);
  m["localization/trigger_rate"] = logic > 0 ? static_cast<double>(logic_localized) / static_cast<double>(logic) : 0.0;
  m["credit/localized"] = static_cast<double>(cstats.localized) / nn;
  m["credit/fallbacks"] = static_cast<double>(cstats.fallbacks());
  m["credit/fallback_missing_span"] = static_cast<double>(cstats.fallback_missing_span);
  m["credit/fallback_no_overlap"] = static_cast<double>(cstats.fallback_no_overlap);
  m["credit/span_fraction"] = span_fraction_n > 0 ? span_fraction_sum / static_cast<double>(span_fraction_n) : 0.0;
  m["loss"] = loss_sum;
  m["kl"] = stat_tokens > 0 ? kl_sum / static_cast<double>(stat_tokens) : 0.0;
  m["clip_ratio/low_mean"] = stat_tokens > 0 ? clip_low_sum / static_cast<double>(stat_tokens) : 0.0;
  m["clip_ratio/high_mean"] = stat_tokens > 0 ? clip_high_sum / static_cast<double>(stat_tokens) : 0.0;
  m["clip_ratio/region_mean"] = m["clip_ratio/low_mean"] + m["clip_ratio/high_mean"];
  if (c.mu > 1) m["ratio_max"] = ratio_max;
  m["entropy"] = entropy_tokens > 0 ? entropy_sum / static_cast<double>(entropy_tokens) : 0.0;
  m["grad_norm"] = grad_norm;
  m["learning_rate"] = lr_now;
  m["completions/mean_length"] = static_cast<double>(tokens) / nn;
  m["completions/max_length"] = static_cast<double>(max_tokens);
  m["completions/clipped_ratio"] = static_cast<double>(truncated) / nn;
  m["time/generate"] = timing.generate;
  m["time/route"] = timing.route;
  m["time/route_wait"] = timing.route_wait;
  m["time/credit"] = timing.credit;
  m["time/update"] = timing.update;
  m["time/step"] = timing.total;
  m["tokens_per_second"] = timing.total > 0 ? static_cast<double>(tokens) / timing.total : 0.0;
  EGCA_RETURN_IF_ERROR(im.metrics->Log(step_, "train", m));

  if (c.dump_rollouts) {
    fs::create_directories(fs::path(c.run_dir) / "rollouts");
    std::string out;
    for (const auto& r : rollouts_) {
      nlohmann::ordered_json j;
      const TrainProblem& p = im.train[batch[r.group]];
      j["step"] = step_;
      j["problem_id"] = r.problem_id;
      j["origin"] = p.record.origin;
      j["group"] = r.group;
      j["sample"] = r.sample;
      j["prompt"] = p.prompt_text;
      j["completion"] = r.completion;
      j["finish"] = FinishReasonName(r.finish);
      j["program"] = r.program;
      j["code_offset"] = r.code_offset;
      j["mode"] = r.route_error.empty() ? credit::FailureModeName(r.route.mode) : "ERROR";
      j["reason"] = r.route_error.empty() ? r.route.reason : r.route_error;
      j["R_hat"] = r.route.pass_fraction;
      j["R"] = r.reward;
      j["advantage"] = r.advantage;
      j["first_failing_test"] = r.route.first_failing_test >= 0 ? r.route.first_failing_test + 1 : 0;
      j["spans"] = nlohmann::json::parse(fmt::format(
          R"({{"error":{},"earliest":{},"last":{},"random":{}}})", SpanJson(r.route.error_span),
          SpanJson(r.route.earliest_divergence), SpanJson(r.route.last_divergence),
          SpanJson(r.route.random_boundary)));
      j["credit"] = credit::CreditPlacementName(r.credit.placement);
      j["fallback"] = credit::FallbackReasonName(r.credit.fallback);
      auto toks = nlohmann::json::array();
      for (size_t t = 0; t < r.token_ids.size(); ++t) {
        toks.push_back({r.token_ids[t], r.token_bytes[t].begin, r.token_bytes[t].end,
                        t < r.credit.advantages.size() ? r.credit.advantages[t] : 0.0});
      }
      j["tokens"] = std::move(toks);  // [id, completion byte begin, end, a_{i,t}]
      out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    }
    EGCA_RETURN_IF_ERROR(WriteFileAtomic(fmt::format("{}/rollouts/step-{}.jsonl", c.run_dir, step_), out));
  }

  if (options_.progress) {
    const double elapsed = Seconds(im.started);
    const double per_step = elapsed / static_cast<double>(im.steps_this_session);
    const double eta = per_step * static_cast<double>(c.steps - step_);
    std::fprintf(stderr,
                 "step %lld/%lld  reward %.3f  pass %.3f  SYNTAX %.2f CONSTRAINT %.2f LOGIC %.2f CORRECT %.2f"
                 "  kl %.4f  %.1f s/step (gen %.1f route %.1f upd %.1f)  ETA %.0fs\n",
                 static_cast<long long>(step_), static_cast<long long>(c.steps), rs.mean, m["pass_all_tests"],
                 m["mode/syntax"], m["mode/constraint"], m["mode/logic"], m["mode/correct"], m["kl"], per_step,
                 timing.generate, timing.route_wait, timing.update, eta);
  }
  return m;
}

// ---- evaluation ------------------------------------------------------------------------

StatusOr<Scalars> GrpoTrainer::Evaluate() {
  Impl& im = *impl_;
  const GrpoConfig& c = config_;
  if (im.eval.empty()) return FailedPrecondition("no evaluation problems (config key 'data.eval')");
  const auto t0 = Clock::now();
  policy_->eval();
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::string> ids;
  for (const auto& p : im.eval) {
    prompts.push_back(p.prompt_ids);
    ids.push_back(p.record.id);
  }
  // Passing = every test passes (pass@k's definition), graded without localization.
  auto grade = [&](const std::vector<Completion>& completions, int64_t per_problem,
                   std::vector<int64_t>* passed) {
    passed->assign(im.eval.size(), 0);
    std::vector<RolloutRecord> records(completions.size());
    for (size_t i = 0; i < completions.size(); ++i) {
      records[i].completion = CompletionTokenBytes(*im.tokenizer, completions[i].token_ids,
          completions[i].finish_reason == FinishReason::kStopString
              ? static_cast<int64_t>(completions[i].text.size()) : -1).first;
      TrainProblem* p = &im.eval[static_cast<size_t>(completions[i].prompt_index)];
      RolloutRecord* r = &records[i];
      im.pool->Submit([&im, p, r](int w) { im.RouteRecord(w, *p, r, /*localize=*/false); });
    }
    im.pool->Wait();
    for (size_t i = 0; i < records.size(); ++i) {
      if (records[i].route_error.empty() && records[i].route.grading.all_passed()) {
        ++(*passed)[static_cast<size_t>(completions[i].prompt_index)];
      }
    }
    (void)per_problem;
  };
  const uint64_t seed = SplitMix64(c.seed ^ 0xE7A1ULL ^ static_cast<uint64_t>(step_));
  Scalars m;
  // Greedy pass@1.
  auto greedy = im.source ? im.source->Sample(*policy_, ids, prompts, im.Sampling(seed, 1, 0.0, 1.0, c.eval_max_new_tokens))
                          : Generate(*policy_, prompts, im.Sampling(seed, 1, 0.0, 1.0, c.eval_max_new_tokens));
  if (!greedy.ok()) return greedy.status();
  std::vector<int64_t> greedy_passed;
  grade(*greedy, 1, &greedy_passed);
  m["pass@1_greedy"] = static_cast<double>(std::count_if(greedy_passed.begin(), greedy_passed.end(),
                                                         [](int64_t x) { return x > 0; })) /
                       static_cast<double>(im.eval.size());
  // Sampled pass@k.
  std::vector<int64_t> sampled_passed;
  if (c.eval_samples > 1 || c.eval_temperature > 0) {
    const SamplingOptions so = im.Sampling(seed + 1, c.eval_samples, c.eval_temperature, c.eval_top_p, c.eval_max_new_tokens);
    auto sampled = im.source ? im.source->Sample(*policy_, ids, prompts, so) : Generate(*policy_, prompts, so);
    if (!sampled.ok()) return sampled.status();
    grade(*sampled, c.eval_samples, &sampled_passed);
    std::vector<std::pair<int64_t, int64_t>> n_c;
    for (int64_t x : sampled_passed) n_c.emplace_back(c.eval_samples, x);
    for (int64_t k : c.eval_k) {
      if (auto v = credit::MeanPassAtK(n_c, k)) m[fmt::format("pass@{}", k)] = *v;
    }
  }
  m["problems"] = static_cast<double>(im.eval.size());
  m["time"] = Seconds(t0);
  EGCA_RETURN_IF_ERROR(im.metrics->Log(step_, "eval", m));
  nlohmann::ordered_json j;
  j["step"] = step_;
  j["metrics"] = m;
  auto rows = nlohmann::ordered_json::array();
  for (size_t i = 0; i < im.eval.size(); ++i) {
    nlohmann::ordered_json row;
    row["problem_id"] = im.eval[i].record.id;
    row["greedy_passed"] = greedy_passed[i] > 0;
    if (!sampled_passed.empty()) {
      row["n"] = c.eval_samples;
      row["c"] = sampled_passed[i];
    }
    rows.push_back(row);
  }
  j["problems"] = rows;
  fs::create_directories(fs::path(c.run_dir) / "eval");
  EGCA_RETURN_IF_ERROR(WriteFileAtomic(fmt::format("{}/eval/step-{}.json", c.run_dir, step_), j.dump(2) + "\n"));
  if (options_.progress) {
    std::string line = fmt::format("eval step {}:", step_);
    for (const auto& [k, v] : m) line += fmt::format("  {} {:.4g}", k, v);
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  policy_->train();
  return m;
}

// ---- checkpoints -------------------------------------------------------------------------

Status GrpoTrainer::SaveCheckpoint() {
  Impl& im = *impl_;
  const GrpoConfig& c = config_;
  const fs::path root = fs::path(c.run_dir) / "checkpoints";
  const fs::path final_dir = root / fmt::format("step-{}", step_);
  const fs::path tmp = root / fmt::format(".tmp-step-{}-{}", step_, getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  // The training dtype, so that resuming continues from exactly these weights.
  EGCA_RETURN_IF_ERROR(trainer::SaveCheckpoint(*policy_, tmp.string(), SaveOptions().set_dtype(policy_->dtype())));
  {
    torch::serialize::OutputArchive archive;
    im.optimizer->save(archive);
    archive.save_to((tmp / "optimizer.pt").string());
  }
  // Tokenizer files beside the weights: the directory is a complete HF checkpoint.
  const fs::path tok_src = c.tokenizer.empty() ? fs::path(c.model) : fs::path(c.tokenizer);
  const fs::path tok_dir = fs::is_directory(tok_src) ? tok_src : tok_src.parent_path();
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
    if (fs::exists(tok_dir / f)) fs::copy_file(tok_dir / f, tmp / f, fs::copy_options::overwrite_existing, ec);
  }
  nlohmann::ordered_json state;
  state["step"] = step_;
  state["optimizer_steps"] = im.optimizer_steps;
  state["seed"] = c.seed;
  state["data_position"] = step_ * c.prompts_per_step;
  state["epoch"] = (step_ * c.prompts_per_step) / static_cast<int64_t>(im.train.size());
  state["learning_rate"] = ScheduledLearningRate(c.lr, im.optimizer_steps, c.warmup_steps, c.steps * c.mu, c.lr_decay);
  // Written last: a directory without it is an incomplete save and is never resumed from.
  EGCA_RETURN_IF_ERROR(WriteFileAtomic((tmp / "trainer_state.json").string(), state.dump(2) + "\n"));
  fs::remove_all(final_dir, ec);
  fs::rename(tmp, final_dir, ec);
  if (ec) return DataLoss(fmt::format("{}: cannot rename into place: {}", final_dir.string(), ec.message()));
  if (c.keep_checkpoints > 0) {
    auto all = ListCheckpoints(c.run_dir);
    for (size_t i = 0; i + static_cast<size_t>(c.keep_checkpoints) < all.size(); ++i) fs::remove_all(all[i].second, ec);
  }
  return Status::Ok();
}

Status GrpoTrainer::Train() {
  const GrpoConfig& c = config_;
  while (step_ < c.steps) {
    EGCA_ASSIGN_OR_RETURN(Scalars m, Step());
    (void)m;
    if (c.eval_every > 0 && !impl_->eval.empty() && step_ % c.eval_every == 0) {
      EGCA_RETURN_IF_ERROR(Evaluate().status());
    }
    if ((c.save_every > 0 && step_ % c.save_every == 0) || step_ == c.steps) {
      EGCA_RETURN_IF_ERROR(SaveCheckpoint());
    }
  }
  return Status::Ok();
}

}  // namespace egca::trainer
