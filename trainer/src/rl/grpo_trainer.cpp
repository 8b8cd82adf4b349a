#include "egca/trainer/rl/grpo_trainer.h"

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
#include "egca/trainer/policy/chat_template.h"
#include "egca/credit/mt_grpo.h"
#include "egca/credit/murphy.h"
#include "egca/credit/reflexicoder.h"
#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/rl/feedback.h"
#include "egca/trainer/rl/grpo_loss.h"
#include "egca/trainer/rl/problem_prompt.h"
#include "egca/trainer/rl/program_router.h"

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
  Language language = Language::kPython;  // what routes it: record.language or data.lang
  gates::Problem routing;
  std::string user_text;  // the user message (statement, starter code, constraints)
  std::string prompt_text;
  std::vector<int32_t> prompt_ids;
  std::shared_ptr<gates::ReferenceCache> cache = std::make_shared<gates::ReferenceCache>();  // Python's
  bool reference_prepared = false;
};

// The instruction before a problem's statement, and after a failed attempt's feedback.
const std::string& InstructionFor(const GrpoConfig& c, Language language) {
  return language == Language::kCpp ? c.instruction_cpp : c.instruction;
}
const std::string& RevisionInstructionFor(const GrpoConfig& c, Language language) {
  return language == Language::kCpp ? c.revision_instruction_cpp : c.revision_instruction;
}

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
    if (it == texts_.end()) {
      // "<id>#turn<t>" (a multi-turn revision) falls back to the problem's own texts.
      const auto hash = problem_ids[p].rfind("#turn");
      if (hash != std::string::npos) it = texts_.find(problem_ids[p].substr(0, hash));
    }
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
  // One per route worker: the executors of the languages the problems use.
  std::vector<std::unique_ptr<ProgramRouter>> routers;
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
  int64_t context = 0;                   // the policy's context (tokens)
  std::shared_ptr<DecoderModel> expert;  // expert_edits
  int64_t expert_context = 0;
  std::vector<TrainProblem*> step_problems;   // the current step's problems (Borrowed)
  std::vector<int64_t> skipped_expansions;    // per prompt of the step

  RouteSettings SettingsFor(const TrainProblem& p, bool localize) const {
    RouteSettings o;
    o.timeout_seconds = config.timeout_seconds;
    o.memory_mb = config.memory_mb;
    o.apps_conventions = p.record.apps_conventions;
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
    std::optional<Language> forced;
    ParseLanguageChoice(config.lang, &forced);  // validated with the config
    std::vector<TrainProblem> out;
    for (auto& r : records) {
      if (r.references.empty()) {
        std::fprintf(stderr, "egca-train: skipped %s: problem %s has no reference solution\n",
                     r.origin.c_str(), r.id.c_str());
        continue;
      }
      TrainProblem p;
      p.language = RoutedLanguage(r.language, forced);
      p.routing.reference = r.references.front();
      p.routing.tests = r.tests;
      std::vector<gates::ConstraintSpec> specs;
      // Constraints are extracted from Python references only (gates::ExtractConstraints
      // reads Python); C++ problems get none.
      if (config.extract_constraints && p.language == Language::kPython) {
        auto extracted = gates::ExtractConstraints(p.routing.reference, {}, r.prompt);
        if (extracted.ok()) {
          specs = *extracted;
          EGCA_ASSIGN_OR_RETURN(p.routing.constraints, gates::MakeConstraintSet(specs));
        }
      }
      p.user_text = ProblemUserMessage(
          r, InstructionFor(config, p.language), config.constraints_in_prompt && !specs.empty() ? gates::PromptSuffix(specs) : "");
      EGCA_ASSIGN_OR_RETURN(p.prompt_text, FormatConversation(chat, config.system_prompt, {{"user", p.user_text}}));
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
    if (config.reward == "reflexicoder") return RouteReflection(worker, problem, r, localize);
    RouteText(worker, problem, r->completion, 0, r, localize);
    if (r->route_error.empty()) r->reward = r->route.reward;
  }

  // Routes the program of `text`, which starts at completion byte `offset`, into r->route
  // with its spans in completion bytes.
  void RouteText(int worker, TrainProblem& problem, const std::string& text, int64_t offset, RolloutRecord* r,
                 bool localize) {
    datasets::Sample sample;
    sample.problem_id = problem.record.id;
    sample.completion = text;
    const datasets::SampleProgram program = datasets::ProgramOf(sample, problem.record);
    r->program = program.code;
    r->code_offset = program.offset + offset;
    auto route = routers[worker]->Route(problem.language, program.code, problem.routing,
                                        SettingsFor(problem, localize), problem.cache);
    if (!route.ok()) {
      r->route_error = route.status().ToString();
      return;
    }
    r->route = std::move(*route);
    // Spans into completion bytes, where the credit operator needs them.
    auto move = [&](std::optional<SourceSpan>& span) {
      span = ToCompletionSpan(span, program);
      if (span) {
        span->begin_byte += static_cast<uint32_t>(offset);
        span->end_byte += static_cast<uint32_t>(offset);
      }
    };
    move(r->route.error_span);
    move(r->route.earliest_divergence);
    move(r->route.last_divergence);
    move(r->route.random_boundary);
  }

  // ReflexiCoder (reward.kind = reflexicoder): the completion is <think>, <answer>, then
  // (<reflection>, <answer>)*; every answer is graded (r_t = fraction of tests passed), the
  // reward is R_overall of credit::ComputeReflectionReward (0 when the format is wrong), and
  // the route (mode, spans for token credit) is the final answer's.
  void RouteReflection(int worker, TrainProblem& problem, RolloutRecord* r, bool localize) {
    const credit::ReflectionTrajectory t = credit::ParseReflectionTrajectory(r->completion);
    if (!t.well_formed) {
      RouteText(worker, problem, r->completion, 0, r, localize);  // spans for credit; reward 0
      r->reward = 0;
      r->reflection_note = "format: " + t.format_error;
      return;
    }
    std::vector<double> scores;
    size_t cursor = 0;
    for (size_t k = 0; k < t.answers.size(); ++k) {
      const size_t tag = r->completion.find("<answer>", cursor);
      const size_t at = tag == std::string::npos ? std::string::npos : r->completion.find(t.answers[k], tag);
      const int64_t offset = at == std::string::npos ? 0 : static_cast<int64_t>(at);
      if (at != std::string::npos) cursor = at + t.answers[k].size();
      const bool last = k + 1 == t.answers.size();
      RouteText(worker, problem, t.answers[k], offset, r, last && localize);
      if (!r->route_error.empty()) return;
      scores.push_back(r->route.pass_fraction);
    }
    auto reward = credit::ComputeReflectionReward(true, scores);
    if (!reward.ok()) {
      r->route_error = reward.status().ToString();
      return;
    }
    r->reward = reward->overall;
    r->reflection_note = reward->ToString();
  }

  // ---- rollout ---------------------------------------------------------------------------

  // One prompt to sample a group from: a problem's prompt, or a node's revision prompt.
  struct PromptJob {
    TrainProblem* problem = nullptr;  // Borrowed.
    std::vector<int32_t> prompt_ids;
    std::string prompt_text;
    std::string source_id;   // the id a RolloutSource sees ("<id>#turn<t>" after turn 1)
    int64_t group = 0;       // index of the problem in the step
    int64_t turn = 1;
    int64_t parent_record = -1;  // index into the step's records (-1: the problem's prompt)
  };

  // Samples `g` completions for every job, generation_chunk jobs at a time, and routes each
  // chunk's samples on the pool while the next chunk generates. Appends g records per job
  // (job-major) to *records and waits for every route before returning.
  Status GenerateAndRoute(DecoderModel& policy, const std::vector<PromptJob>& jobs, int64_t g, int64_t step,
                          int64_t turn, std::vector<RolloutRecord>* records, StepTimings* timing) {
    const size_t base = records->size();
    records->resize(base + jobs.size() * static_cast<size_t>(g));  // no reallocation below
    const int64_t n = static_cast<int64_t>(jobs.size());
    const int64_t chunk = config.generation_chunk > 0 ? config.generation_chunk : std::max<int64_t>(n, 1);
    std::mutex route_mu;
    double route_busy = 0;
    for (int64_t first = 0, chunk_index = 0; first < n; first += chunk, ++chunk_index) {
      const int64_t last = std::min(n, first + chunk);
      std::vector<std::vector<int32_t>> prompts;
      std::vector<std::string> ids;
      for (int64_t j = first; j < last; ++j) {
        prompts.push_back(jobs[static_cast<size_t>(j)].prompt_ids);
        ids.push_back(jobs[static_cast<size_t>(j)].source_id);
      }
      // Turn 1 keeps the single-turn seeds; later turns are salted by the turn.
      const uint64_t seed = SplitMix64(config.seed ^ SplitMix64((static_cast<uint64_t>(step) << 20) +
                                                                 (static_cast<uint64_t>(turn - 1) << 12) +
                                                                 static_cast<uint64_t>(chunk_index)));
      SamplingOptions so = Sampling(seed, g, config.temperature, config.top_p, config.max_new_tokens);
      const auto t_gen = Clock::now();
      StatusOr<std::vector<Completion>> completions =
          source ? source->Sample(policy, ids, prompts, so) : Generate(policy, prompts, so);
      timing->generate += Seconds(t_gen);
      if (!completions.ok()) {
        pool->Wait();
        return completions.status();
      }
      for (Completion& comp : *completions) {
        const PromptJob& job = jobs[static_cast<size_t>(first + comp.prompt_index)];
        RolloutRecord& r = (*records)[base + static_cast<size_t>((first + comp.prompt_index) * g + comp.sample_index)];
        r.problem_id = job.problem->record.id;
        r.group = job.group;
        r.sample = comp.sample_index;
        r.turn = job.turn;
        r.prompt_ids = job.prompt_ids;
        r.prompt_text = job.prompt_text;
        r.parent_node = job.parent_record;  // a record index until the trees are numbered
        r.finish = comp.finish_reason;
        const int64_t cut = comp.finish_reason == FinishReason::kStopString
                                ? static_cast<int64_t>(comp.text.size()) : -1;
        auto [text, bytes] = CompletionTokenBytes(*tokenizer, comp.token_ids, cut);
        r.completion = std::move(text);
        r.token_bytes = std::move(bytes);
        r.token_ids = std::move(comp.token_ids);
        r.old_log_probs = std::move(comp.policy_log_probs);
        TrainProblem* problem = job.problem;
        const bool localize = config.localize;
        pool->Submit([this, problem, &r, localize, &route_mu, &route_busy](int w) {
          const auto t0 = Clock::now();
          RouteRecord(w, *problem, &r, localize);
          std::lock_guard<std::mutex> lock(route_mu);
          route_busy += Seconds(t0);
        });
      }
    }
    const auto t_wait = Clock::now();
    pool->Wait();
    timing->route_wait += Seconds(t_wait);
    timing->route += route_busy;
    for (size_t i = base; i < records->size(); ++i) {
      RolloutRecord& r = (*records)[i];
      r.turn_reward = r.route_error.empty() ? r.route.pass_fraction : 0.0;
    }
    return Status::Ok();
  }

  // ---- multi-turn trees ------------------------------------------------------------------

  // The user message that asks for a revision of record `r` (nullopt: none can be built,
  // e.g. the hook failed; the error is reported and the node is not expanded).
  StatusOr<std::string> RevisionUserMessage(const TrainProblem& problem, const RolloutRecord& r,
                                            const std::string& expert_text, std::string* feedback_out) {
    FeedbackOptions fo;
    ParseFeedbackMode(config.feedback, &fo.mode);
    fo.sandbox_slice = config.sandbox_slice;
    fo.max_chars = config.feedback_chars;
    std::string execution;
    if (r.route_error.empty()) execution = ExecutionFeedback(r.route, problem.routing.tests, r.program, fo);
    switch (fo.mode) {
      case FeedbackMode::kPlain:
        *feedback_out = "";
        return RevisionMessage("", RevisionInstructionFor(config, problem.language));
      case FeedbackMode::kLevelFeedback:
      case FeedbackMode::kEgca:
        *feedback_out = execution;
        return RevisionMessage(execution, RevisionInstructionFor(config, problem.language));
      case FeedbackMode::kExpertEdits:
        *feedback_out = "Suggested edits:\n" + expert_text;
        return RevisionMessage(*feedback_out, RevisionInstructionFor(config, problem.language));
      case FeedbackMode::kCustom: {
        const auto in = FeedbackHookInput::For(problem.user_text, r.turn, r.completion, r.program, r.route,
                                               r.route_error, execution);
        EGCA_ASSIGN_OR_RETURN(std::string message, RunFeedbackHook(config.feedback_command, in));
        *feedback_out = message;
        return message;
      }
    }
    return Internal("unknown feedback mode");
  }

  // expert_edits: the expert model's proposals for every record in `which` (greedy).
  StatusOr<std::vector<std::string>> ExpertProposals(const std::vector<RolloutRecord>& records,
                                                     const std::vector<size_t>& which, int64_t step) {
    std::vector<std::vector<int32_t>> prompts;
    FeedbackOptions fo;
    fo.mode = FeedbackMode::kLevelFeedback;
    fo.sandbox_slice = config.sandbox_slice;
    fo.max_chars = config.feedback_chars;
    for (size_t i : which) {
      const RolloutRecord& r = records[i];
      const TrainProblem& problem = *problem_of_record(r);
      std::string ask = "A programming task, a candidate solution that fails, and what its execution showed. "
                        "Propose concise, specific edits that fix the solution. Do not rewrite it.\n\nTask:\n" +
                        problem.user_text + "\n\nCandidate solution:\n```" +
                        LanguageName(problem.language) + "\n" + r.program + "\n```\n\n";
      if (r.route_error.empty()) ask += "Execution:\n" + ExecutionFeedback(r.route, problem.routing.tests, r.program, fo);
      EGCA_ASSIGN_OR_RETURN(std::string text, FormatConversation(chat, "", {{"user", ask}}));
      std::vector<int32_t> ids = tokenizer->EncodeIds(text);
      const int64_t keep = std::max<int64_t>(1, expert_context - config.expert_max_new_tokens);
      if (static_cast<int64_t>(ids.size()) > keep) ids.erase(ids.begin(), ids.end() - keep);  // keep the end
      prompts.push_back(std::move(ids));
    }
    std::vector<std::string> out(which.size());
    if (prompts.empty()) return out;
    const uint64_t seed = SplitMix64(config.seed ^ 0xE4E27ULL ^ static_cast<uint64_t>(step));
    SamplingOptions so = Sampling(seed, 1, 0.0, 1.0, config.expert_max_new_tokens);
    EGCA_ASSIGN_OR_RETURN(auto completions, Generate(*expert, prompts, so));
    for (const Completion& comp : completions) out[static_cast<size_t>(comp.prompt_index)] = comp.text;
    return out;
  }

  const TrainProblem* problem_of_record(const RolloutRecord& r) const { return step_problems[static_cast<size_t>(r.group)]; }

  // Turns 2..T: every failed node of the previous turn gets a revision prompt and a group of
  // G_t children. Records keep the step's order: all of turn 1, then all of turn 2, ...
  Status GrowTrees(DecoderModel& policy, const std::vector<size_t>& batch, int64_t step,
                   std::vector<RolloutRecord>* records, StepTimings* timing) {
    step_problems.clear();
    for (size_t idx : batch) step_problems.push_back(&train[idx]);
    skipped_expansions.assign(batch.size(), 0);
    const int64_t gt = config.turn_group_size > 0 ? config.turn_group_size : config.group_size;
    size_t turn_begin = 0;
    for (int64_t turn = 2; turn <= config.turns; ++turn) {
      const size_t turn_end = records->size();
      const auto t_feedback = Clock::now();
      std::vector<size_t> failed;
      for (size_t i = turn_begin; i < turn_end; ++i) {
        const RolloutRecord& r = (*records)[i];
        // Solved nodes are terminal; egca's own routing failures are not the policy's and are
        // not expanded.
        if (r.route_error.empty() && r.turn_reward < 1.0) failed.push_back(i);
      }
      std::vector<std::string> proposals(failed.size());
      if (config.feedback == "expert_edits" && !failed.empty()) {
        EGCA_ASSIGN_OR_RETURN(proposals, ExpertProposals(*records, failed, step * 64 + turn));
      }
      std::vector<PromptJob> jobs;
      for (size_t k = 0; k < failed.size(); ++k) {
        RolloutRecord& r = (*records)[failed[k]];
        TrainProblem* problem = step_problems[static_cast<size_t>(r.group)];
        auto user = RevisionUserMessage(*problem, r, proposals[k], &r.feedback);
        if (!user.ok()) {
          std::fprintf(stderr, "egca-train: step %lld: %s: node not expanded: %s\n",
                       static_cast<long long>(step + 1), problem->record.id.c_str(),
                       user.status().ToString().c_str());
          ++skipped_expansions[static_cast<size_t>(r.group)];
          continue;
        }
        PromptJob job;
        job.problem = problem;
        EGCA_ASSIGN_OR_RETURN(job.prompt_text,
                              FormatConversation(chat, config.system_prompt,
                                                 {{"user", problem->user_text}, {"assistant", r.completion}, {"user", *user}}));
        job.prompt_ids = tokenizer->EncodeIds(job.prompt_text);
        if (static_cast<int64_t>(job.prompt_ids.size()) + config.max_new_tokens > context) {
          ++skipped_expansions[static_cast<size_t>(r.group)];  // the revision would not fit
          continue;
        }
        job.source_id = fmt::format("{}#turn{}", problem->record.id, turn);
        job.group = r.group;
        job.turn = turn;
        job.parent_record = static_cast<int64_t>(failed[k]);
        jobs.push_back(std::move(job));
      }
      timing->feedback += Seconds(t_feedback);
      if (jobs.empty()) break;
      turn_begin = turn_end;
      EGCA_RETURN_IF_ERROR(GenerateAndRoute(policy, jobs, gt, step, turn, records, timing));
    }
    return Status::Ok();
  }

  // Numbers every prompt's nodes into a credit::MurphyTree, prunes, backs up and computes
  // the advantages and loss weights of the configured method.
  Status CreditTrees(int64_t n_prompts, std::vector<RolloutRecord>* records, std::vector<RolloutTree>* trees,
                     int64_t* zero_variance_groups, int64_t* groups_total, std::vector<double>* group_reward_std) {
    trees->assign(static_cast<size_t>(n_prompts), RolloutTree{});
    std::vector<credit::MurphyTree> murphy(static_cast<size_t>(n_prompts));
    for (size_t i = 0; i < records->size(); ++i) {
      RolloutRecord& r = (*records)[i];
      RolloutTree& t = (*trees)[static_cast<size_t>(r.group)];
      credit::MurphyTree& mt = murphy[static_cast<size_t>(r.group)];
      const int parent = r.parent_node >= 0 ? static_cast<int>((*records)[static_cast<size_t>(r.parent_node)].node) : -1;
      r.node = mt.AddResponse(parent, r.turn_reward, {}, {}, {}, static_cast<int64_t>(r.token_ids.size()));
      r.parent_node = parent;
      t.problem_id = r.problem_id;
      t.records.push_back(i);
    }
    const credit::GroupAdvantageOptions adv_options{
        config.normalization == "mean_std" ? credit::AdvantageNormalization::kMeanStd
                                           : credit::AdvantageNormalization::kMeanCentered};
    credit::PruneOptions po;
    po.strategy = config.prune == "intra"   ? credit::PruneStrategy::kIntraGroup
                  : config.prune == "inter" ? credit::PruneStrategy::kInterGroup
                                            : credit::PruneStrategy::kNone;
    po.budget = static_cast<int>(config.prune_budget);
    po.intra_last_turn = static_cast<int>(config.prune_last_turn);
    for (size_t p = 0; p < murphy.size(); ++p) {
      RolloutTree& t = (*trees)[p];
      t.expansions_skipped = skipped_expansions.empty() ? 0 : skipped_expansions[p];
      for (size_t id = 0; id < t.records.size(); ++id) {
        // Node text for the dump: the first line of the feedback that expanded it.
        murphy[p].nodes[id].feedback = (*records)[t.records[id]].feedback;
      }
      EGCA_RETURN_IF_ERROR(credit::ValidateTree(murphy[p]));
      const credit::MurphyTree pruned = credit::Prune(murphy[p], po);
      const credit::TreeSizes sizes = credit::ComputeTreeSizes(pruned);
      t.generated_per_turn.assign(static_cast<size_t>(config.turns), 0);
      t.retained_per_turn.assign(static_cast<size_t>(config.turns), 0);
      for (size_t k = 0; k < sizes.generated_per_turn.size() && k < t.generated_per_turn.size(); ++k) {
        t.generated_per_turn[k] = sizes.generated_per_turn[k];
        t.retained_per_turn[k] = sizes.retained_per_turn[k];
      }
      for (const auto& node : pruned.nodes) {
        if (pruned.IsSolved(node)) {
          t.solved_at_turn = t.solved_at_turn == 0 ? node.turn : std::min<int64_t>(t.solved_at_turn, node.turn);
        }
      }
      const size_t nodes = pruned.nodes.size();
      std::vector<double> credited(nodes), advantage(nodes, 0.0), weight(nodes, 0.0);
      for (size_t id = 0; id < nodes; ++id) credited[id] = pruned.nodes[id].reward;
      credit::NodeAdvantages na;
      if (config.tree_advantage == "murphy") {
        credit::BackupOptions bo;
        bo.strategy = config.backup == "mars"   ? credit::BackupStrategy::kMaRS
                      : config.backup == "mers" ? credit::BackupStrategy::kMeRS
                                                : credit::BackupStrategy::kNone;
        bo.gamma = config.backup_gamma;
        credited = credit::BackupRewards(pruned, bo);
        na = credit::ComputeNodeAdvantages(pruned, credited, adv_options);
        for (const auto& group : na.groups) {
          ++*groups_total;
          if (group.stats.all_equal) ++*zero_variance_groups;
          group_reward_std->push_back(group.stats.std);
          for (int id : group.members) {
            advantage[static_cast<size_t>(id)] = na.advantage[static_cast<size_t>(id)];
            weight[static_cast<size_t>(id)] = 1.0 / static_cast<double>(group.members.size());
          }
        }
      } else {
        // Trajectory baselines: every root-to-terminal path of the retained tree is one
        // member of the prompt's group; a node on several paths is trained once with the sum
        // of their advantages (the same gradient as one copy per path whenever the clip is
        // inactive, e.g. the first pass of every step).
        const auto paths = credit::GrpoMtTrajectories(pruned, adv_options);
        const double m = static_cast<double>(std::max<size_t>(paths.size(), 1));
        std::vector<double> finals;
        for (const auto& path : paths) finals.push_back(path.final_reward);
        const auto stats = credit::ComputeGroupStats(finals);
        ++*groups_total;
        if (stats.all_equal) ++*zero_variance_groups;
        group_reward_std->push_back(stats.std);
        if (config.tree_advantage == "grpo_mt") {
          for (const auto& path : paths) {
            for (int id : path.path) {
              advantage[static_cast<size_t>(id)] += path.advantage;
              weight[static_cast<size_t>(id)] = 1.0 / m;
            }
          }
        } else if (!paths.empty()) {
          // MT-GRPO on T turns: R^I at turn k is the reward of the path's node at turn k; a
          // path that ended earlier (solved, or not expanded) carries its last node's reward
          // forward; R^O is the terminal reward.
          const int64_t K = config.turns;
          std::vector<std::vector<double>> intermediate(static_cast<size_t>(K - 1), std::vector<double>(paths.size()));
          std::vector<double> outcome(paths.size());
          for (size_t j = 0; j < paths.size(); ++j) {
            const auto& path = paths[j].path;
            for (int64_t k = 0; k + 1 < K; ++k) {
              const int id = path[std::min<size_t>(static_cast<size_t>(k), path.size() - 1)];
              intermediate[static_cast<size_t>(k)][j] = pruned.nodes[static_cast<size_t>(id)].reward;
            }
            outcome[j] = paths[j].final_reward;
          }
          credit::MtGrpoOptions mo;
          mo.alpha = config.mt_alpha;
          mo.normalization = adv_options;
          StatusOr<credit::TurnAdvantages> ta =
              config.tree_advantage == "mt_grpo" ? credit::MtGrpoAdvantages(intermediate, outcome, mo)
              : config.tree_advantage == "grpo_or" ? credit::OutcomeOnlyAdvantages(intermediate, outcome, adv_options)
                                                   : credit::MergedRewardAdvantages(intermediate, outcome, adv_options);
          if (!ta.ok()) return ta.status();
          for (size_t j = 0; j < paths.size(); ++j) {
            for (size_t k = 0; k < paths[j].path.size(); ++k) {
              const int id = paths[j].path[k];
              advantage[static_cast<size_t>(id)] += ta->advantages[j][k];
              weight[static_cast<size_t>(id)] = 1.0 / m;
            }
          }
        }
      }
      credit::MurphyDumpOptions dopt;
      dopt.credited = &credited;
      if (config.tree_advantage == "murphy") dopt.advantages = &na;
      t.dump = credit::DumpMurphyTree(pruned, dopt);
      for (size_t id = 0; id < nodes; ++id) {
        RolloutRecord& r = (*records)[t.records[id]];
        r.retained = pruned.nodes[id].retained && weight[id] > 0;
        r.credited_reward = credited[id];
        r.advantage = r.retained ? advantage[id] : 0.0;
        r.loss_weight = r.retained ? weight[id] : 0.0;
      }
    }
    return Status::Ok();
  }

  // ---- update ----------------------------------------------------------------------------

  struct UpdateStats {
    double loss = 0, kl = 0, clip_low = 0, clip_high = 0, entropy = 0, grad_norm = 0, ratio_max = 0, lr = 0;
  };

  // mu passes of AdamW over records[train], in micro-batches whose gradients add up to the
  // batch's: loss = (1 / batch_samples) sum_i w_i sum_t l_{i,t} (w_i = loss_weight when
  // `weighted`, else 1).
  Status UpdatePolicy(DecoderModel& policy, const std::vector<RolloutRecord>& records,
                      const std::vector<size_t>& train_set, int64_t batch_samples, bool weighted, UpdateStats* us) {
    const int64_t n = static_cast<int64_t>(train_set.size());
    if (n == 0) return Status::Ok();
    size_t max_len = 1;
    for (size_t i : train_set) max_len = std::max(max_len, records[i].token_ids.size());
    std::vector<credit::TokenCredit> credits;
    credits.reserve(train_set.size());
    for (size_t i : train_set) credits.push_back(records[i].credit);
    const std::vector<float> packed = credit::PackTokenAdvantages(credits, max_len);
    const at::Tensor all_adv = at::from_blob(const_cast<float*>(packed.data()),
                                             {n, static_cast<int64_t>(max_len)}, at::kFloat).clone();  // [N, L]
    at::Tensor all_old = at::zeros({n, static_cast<int64_t>(max_len)}, at::kFloat);                       // [N, L]
    at::Tensor all_w = at::ones({n}, at::kFloat);                                                         // [N]
    {
      auto a = all_old.accessor<float, 2>();
      auto w = all_w.accessor<float, 1>();
      for (int64_t k = 0; k < n; ++k) {
        const RolloutRecord& r = records[train_set[static_cast<size_t>(k)]];
        for (size_t t = 0; t < r.old_log_probs.size() && t < max_len; ++t) a[k][static_cast<int64_t>(t)] = r.old_log_probs[t];
        if (weighted) w[k] = static_cast<float>(r.loss_weight);
      }
    }
    struct MicroBatch {
      int64_t begin, end;
      std::vector<std::vector<int32_t>> prompts, completions;
      at::Tensor ref;  // [mb, L_mb] or undefined
    };
    std::vector<MicroBatch> micro;
    for (int64_t b = 0; b < n; b += config.micro_batch) {
      MicroBatch m{b, std::min(n, b + config.micro_batch), {}, {}, {}};
      for (int64_t k = m.begin; k < m.end; ++k) {
        const auto& r = records[train_set[static_cast<size_t>(k)]];
        m.prompts.push_back(r.prompt_ids);
        m.completions.push_back(r.token_ids);
      }
      if (reference) {
        at::NoGradGuard no_grad;
        m.ref = reference->ScoreCompletions(m.prompts, m.completions).log_probs;
      }
      micro.push_back(std::move(m));
    }
    GrpoLossOptions lo;
    lo.eps_low = config.eps_low;
    lo.eps_high = config.eps_high;
    lo.beta = config.beta;
    lo.batch_samples = batch_samples;
    double kl_sum = 0, clip_low_sum = 0, clip_high_sum = 0, entropy_sum = 0;
    int64_t stat_tokens = 0, entropy_tokens = 0;
    policy.train();
    const int64_t total_optimizer_steps = config.steps * config.mu;
    for (int64_t pass = 0; pass < config.mu; ++pass) {
      optimizer->zero_grad();
      double pass_loss = 0;
      for (const MicroBatch& m : micro) {
        CompletionLogProbs out = policy.ScoreCompletions(m.prompts, m.completions, /*want_entropy=*/pass == 0);
        const int64_t len = out.log_probs.size(1);
        const at::Tensor adv = all_adv.slice(0, m.begin, m.end).slice(1, 0, len).to(device);
        const at::Tensor old = all_old.slice(0, m.begin, m.end).slice(1, 0, len).to(device);
        lo.sample_weights = weighted ? all_w.slice(0, m.begin, m.end).to(device) : at::Tensor();
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
          us->ratio_max = std::max(us->ratio_max, ls.ratio_max);
        }
      }
      if (pass == 0) us->loss = pass_loss;
      std::vector<at::Tensor> params;
      for (auto& p : policy.parameters()) {
        if (p.grad().defined()) params.push_back(p);
      }
      us->grad_norm = config.grad_clip > 0
                          ? torch::nn::utils::clip_grad_norm_(params, config.grad_clip)
                          : torch::nn::utils::clip_grad_norm_(params, std::numeric_limits<double>::infinity());
      us->lr = ScheduledLearningRate(config.lr, optimizer_steps, config.warmup_steps, total_optimizer_steps,
                                     config.lr_decay);
      for (auto& group : optimizer->param_groups()) {
        static_cast<torch::optim::AdamWOptions&>(group.options()).lr(us->lr);
      }
      optimizer->step();
      ++optimizer_steps;
    }
    if (device.is_cuda()) torch::cuda::synchronize();
    const double tok = static_cast<double>(std::max<int64_t>(stat_tokens, 1));
    us->kl = stat_tokens > 0 ? kl_sum / tok : 0.0;
    us->clip_low = stat_tokens > 0 ? clip_low_sum / tok : 0.0;
    us->clip_high = stat_tokens > 0 ? clip_high_sum / tok : 0.0;
    us->entropy = entropy_tokens > 0 ? entropy_sum / static_cast<double>(entropy_tokens) : 0.0;
    return Status::Ok();
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
  EGCA_ASSIGN_OR_RETURN(im.chat, ChatTemplate::Named(c.chat_template));
  im.stop_ids = DefaultStopTokenIds(*im.tokenizer, mc.eos_token_id);
  EGCA_ASSIGN_OR_RETURN(im.train, im.LoadProblemSet(c.train_data, c.train_format, c.train_limit, "data.train"));
  if (!c.eval_data.empty()) {
    EGCA_ASSIGN_OR_RETURN(im.eval, im.LoadProblemSet(c.eval_data, c.eval_format, c.eval_limit, "data.eval"));
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


  // 2. Models.
  EGCA_ASSIGN_OR_RETURN(t->policy_, LoadCheckpoint(c.model, LoadOptions(im.device).set_dtype(im.dtype)));
  if (c.beta > 0) {
    EGCA_ASSIGN_OR_RETURN(im.reference, LoadCheckpoint(ref_dir, LoadOptions(im.device).set_dtype(im.dtype)));
    im.reference->eval();
    for (auto& p : im.reference->parameters()) p.set_requires_grad(false);
  }
  if (c.turns > 1 && c.feedback == "expert_edits") {
    if (!fs::exists(c.expert_model + "/config.json")) {
      return NotFound(fmt::format("{}/config.json: not found (config key 'multi_turn.expert_model')", c.expert_model));
    }
    EGCA_ASSIGN_OR_RETURN(ModelConfig ec, LoadModelConfig(c.expert_model + "/config.json"));
    if (ec.vocab_size != mc.vocab_size) {
      return InvalidArgument(fmt::format(
          "{}: vocabulary of {} tokens, the policy's tokenizer has {} (config key 'multi_turn.expert_model')",
          c.expert_model, ec.vocab_size, mc.vocab_size));
    }
    im.expert_context = ec.max_position_embeddings;
    EGCA_ASSIGN_OR_RETURN(im.expert, LoadCheckpoint(c.expert_model, LoadOptions(im.device).set_dtype(im.dtype)));
    im.expert->eval();
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
  const bool multi_turn = c.turns > 1;

  // 1. Prompts.
  const std::vector<size_t> batch = im.ProblemsOfStep(step_);
  const int64_t n_prompts = static_cast<int64_t>(batch.size());
  rollouts_.clear();
  trees_.clear();
  if (c.prepare_reference && c.localize) {
    for (size_t idx : batch) {
      TrainProblem& p = im.train[idx];
      if (p.reference_prepared) continue;
      p.reference_prepared = true;
      im.pool->Submit([&im, &p](int w) {
        // Optional: routing computes what it lacks.
        (void)im.routers[w]->PrepareReference(p.language, p.routing, im.SettingsFor(p, true), p.cache);
      });
    }
  }

  // 2 + 3. Rollout and routing: the turn-1 group of every prompt, then (multi-turn) the
  //        revisions of every failed node, turn by turn.
  std::vector<Impl::PromptJob> jobs;
  for (int64_t p = 0; p < n_prompts; ++p) {
    TrainProblem& problem = im.train[batch[static_cast<size_t>(p)]];
    jobs.push_back({&problem, problem.prompt_ids, problem.prompt_text, problem.record.id, p, 1, -1});
  }
  EGCA_RETURN_IF_ERROR(im.GenerateAndRoute(*policy_, jobs, g, step_, 1, &rollouts_, &timing));

  // Group advantages (single-turn) or tree credit (multi-turn); `train` lists the records
  // the loss sees.
  if (multi_turn) EGCA_RETURN_IF_ERROR(im.GrowTrees(*policy_, batch, step_, &rollouts_, &timing));
  const auto t_credit = Clock::now();
  const credit::GroupAdvantageOptions adv_options{
      c.normalization == "mean_std" ? credit::AdvantageNormalization::kMeanStd
                                    : credit::AdvantageNormalization::kMeanCentered};
  int64_t zero_variance_groups = 0, groups_total = 0;
  std::vector<double> group_reward_std;
  std::vector<size_t> train;
  if (!multi_turn) {
    for (int64_t grp = 0; grp < n_prompts; ++grp) {
      std::vector<double> rewards;
      std::vector<RolloutRecord*> members;
      for (int64_t s = 0; s < g; ++s) {
        RolloutRecord& r = rollouts_[static_cast<size_t>(grp * g + s)];
        r.credited_reward = r.reward;
        if (!r.route_error.empty()) continue;
        rewards.push_back(r.reward);
        members.push_back(&r);
      }
      const auto stats = credit::ComputeGroupStats(rewards);
      ++groups_total;
      if (stats.all_equal) ++zero_variance_groups;
      group_reward_std.push_back(stats.std);
      const auto adv = credit::GroupAdvantages(rewards, adv_options);
      for (size_t k = 0; k < members.size(); ++k) members[k]->advantage = adv[k];
    }
    for (size_t i = 0; i < rollouts_.size(); ++i) train.push_back(i);
  } else {
    EGCA_RETURN_IF_ERROR(im.CreditTrees(n_prompts, &rollouts_, &trees_, &zero_variance_groups, &groups_total,
                                        &group_reward_std));
    for (size_t i = 0; i < rollouts_.size(); ++i) {
      if (rollouts_[i].retained) train.push_back(i);
    }
  }

  // 4. Token credit (inside every node for multi-turn).
  credit::TokenCreditOptions co;
  co.target = TargetOf(c.target);
  co.soft_weight = c.soft_weight;
  co.seed = SplitMix64(c.seed ^ static_cast<uint64_t>(step_));
  credit::TokenCreditStats cstats;
  double span_fraction_sum = 0;
  int64_t span_fraction_n = 0;
  for (size_t i : train) {
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

  // 5. Update.
  const auto t_update = Clock::now();
  Impl::UpdateStats us;
  EGCA_RETURN_IF_ERROR(im.UpdatePolicy(*policy_, rollouts_, train,
                                       multi_turn ? n_prompts : static_cast<int64_t>(train.size()),
                                       /*weighted=*/multi_turn, &us));
  timing.update = Seconds(t_update);
  ++step_;
  ++im.steps_this_session;
  timing.total = Seconds(t_step);
  timings_ = timing;

  // 6. Metrics (names as TRL's where the meaning is the same), over the trained samples.
  Scalars m;
  std::vector<double> rewards;
  int64_t modes[4] = {0, 0, 0, 0}, route_errors = 0, truncated = 0, tokens = 0, max_tokens = 0, passed_all = 0;
  int64_t logic = 0, logic_localized = 0;
  for (size_t i : train) {
    const RolloutRecord& r = rollouts_[i];
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
  const double nn = std::max<double>(1.0, static_cast<double>(train.size()));
  m["reward"] = rs.mean;
  m["reward_std"] = rs.std;
  m["reward_std_in_group"] = group_reward_std.empty() ? 0.0
      : std::accumulate(group_reward_std.begin(), group_reward_std.end(), 0.0) / static_cast<double>(group_reward_std.size());
  m["frac_reward_zero_std"] = groups_total > 0 ? static_cast<double>(zero_variance_groups) / static_cast<double>(groups_total) : 0.0;
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
  m["loss"] = us.loss;
  m["kl"] = us.kl;
  m["clip_ratio/low_mean"] = us.clip_low;
  m["clip_ratio/high_mean"] = us.clip_high;
  m["clip_ratio/region_mean"] = us.clip_low + us.clip_high;
  if (c.mu > 1) m["ratio_max"] = us.ratio_max;
  m["entropy"] = us.entropy;
  m["grad_norm"] = us.grad_norm;
  m["learning_rate"] = us.lr;
  m["completions/mean_length"] = static_cast<double>(tokens) / nn;
  m["completions/max_length"] = static_cast<double>(max_tokens);
  m["completions/clipped_ratio"] = static_cast<double>(truncated) / nn;
  m["time/generate"] = timing.generate;
  m["time/route"] = timing.route;
  m["time/route_wait"] = timing.route_wait;
  m["time/credit"] = timing.credit;
  m["time/update"] = timing.update;
  m["time/step"] = timing.total;
  int64_t generated_tokens = 0;
  for (const auto& r : rollouts_) generated_tokens += static_cast<int64_t>(r.token_ids.size());
  m["tokens_per_second"] = timing.total > 0 ? static_cast<double>(generated_tokens) / timing.total : 0.0;
  if (multi_turn) AddTreeMetrics(&m);
  EGCA_RETURN_IF_ERROR(im.metrics->Log(step_, "train", m));

  if (c.dump_rollouts) {
    fs::create_directories(fs::path(c.run_dir) / "rollouts");
    std::string out;
    for (const auto& r : rollouts_) {
      nlohmann::ordered_json j;
      const TrainProblem& p = im.train[batch[static_cast<size_t>(r.group)]];
      j["step"] = step_;
      j["problem_id"] = r.problem_id;
      j["origin"] = p.record.origin;
      j["language"] = LanguageName(p.language);
      j["group"] = r.group;
      j["sample"] = r.sample;
      if (multi_turn) {
        j["turn"] = r.turn;
        j["node"] = r.node;
        j["parent"] = r.parent_node;
        j["retained"] = r.retained;
        j["R_credited"] = r.credited_reward;
        j["loss_weight"] = r.loss_weight;
        if (!r.feedback.empty()) j["feedback"] = r.feedback;
      }
      j["prompt"] = r.prompt_text;
      j["completion"] = r.completion;
      j["finish"] = FinishReasonName(r.finish);
      j["program"] = r.program;
      j["code_offset"] = r.code_offset;
      j["mode"] = r.route_error.empty() ? credit::FailureModeName(r.route.mode) : "ERROR";
      j["reason"] = r.route_error.empty() ? r.route.reason : r.route_error;
      j["R_hat"] = r.route.pass_fraction;
      j["R"] = r.reward;
      if (!r.reflection_note.empty()) j["reflexicoder"] = r.reflection_note;
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
  if (multi_turn && c.dump_trees) EGCA_RETURN_IF_ERROR(DumpTrees());

  if (options_.progress) {
    const double elapsed = Seconds(im.started);
    const double per_step = elapsed / static_cast<double>(im.steps_this_session);
    const double eta = per_step * static_cast<double>(c.steps - step_);
    std::fprintf(stderr,
                 "step %lld/%lld  reward %.3f  pass %.3f  SYNTAX %.2f CONSTRAINT %.2f LOGIC %.2f CORRECT %.2f"
                 "  kl %.4f  %.1f s/step (gen %.1f route %.1f upd %.1f)  ETA %.0fs%s\n",
                 static_cast<long long>(step_), static_cast<long long>(c.steps), rs.mean, m["pass_all_tests"],
                 m["mode/syntax"], m["mode/constraint"], m["mode/logic"], m["mode/correct"], m["kl"], per_step,
                 timing.generate, timing.route_wait, timing.update, eta,
                 multi_turn ? fmt::format("  nodes {:.0f} -> {:.0f}", m["tree/generated"], m["tree/retained"]).c_str() : "");
  }
  return m;
}

void GrpoTrainer::AddTreeMetrics(Scalars* m) const {
  const GrpoConfig& c = config_;
  std::vector<double> generated(static_cast<size_t>(c.turns), 0), retained(static_cast<size_t>(c.turns), 0),
      solved(static_cast<size_t>(c.turns) + 1, 0);
  int64_t skipped = 0;
  for (const auto& t : trees_) {
    for (size_t k = 0; k < t.generated_per_turn.size() && k < generated.size(); ++k) {
      generated[k] += static_cast<double>(t.generated_per_turn[k]);
      retained[k] += static_cast<double>(t.retained_per_turn[k]);
    }
    solved[static_cast<size_t>(std::clamp<int64_t>(t.solved_at_turn, 0, c.turns))] += 1;
    skipped += t.expansions_skipped;
  }
  double before = 0, after = 0, n = 0, total_generated = 0, total_retained = 0;
  for (const auto& r : rollouts_) {
    if (!r.retained) continue;
    before += r.turn_reward;
    after += r.credited_reward;
    n += 1;
  }
  const double prompts = std::max<double>(1.0, static_cast<double>(trees_.size()));
  for (int64_t k = 0; k < c.turns; ++k) {
    (*m)[fmt::format("tree/generated_turn{}", k + 1)] = generated[static_cast<size_t>(k)] / prompts;
    (*m)[fmt::format("tree/retained_turn{}", k + 1)] = retained[static_cast<size_t>(k)] / prompts;
    (*m)[fmt::format("tree/solved_at_turn{}", k + 1)] = solved[static_cast<size_t>(k) + 1] / prompts;
    total_generated += generated[static_cast<size_t>(k)];
    total_retained += retained[static_cast<size_t>(k)];
  }
  (*m)["tree/unsolved"] = solved[0] / prompts;
  (*m)["tree/generated"] = total_generated / prompts;
  (*m)["tree/retained"] = total_retained / prompts;
  (*m)["tree/expansions_skipped"] = static_cast<double>(skipped);
  (*m)["tree/reward_before_backup"] = n > 0 ? before / n : 0.0;
  (*m)["tree/reward_after_backup"] = n > 0 ? after / n : 0.0;
  (*m)["time/feedback"] = timings_.feedback;
}

Status GrpoTrainer::DumpTrees() const {
  const GrpoConfig& c = config_;
  fs::create_directories(fs::path(c.run_dir) / "trees");
  std::string text;
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const auto& t : trees_) {
    text += fmt::format("== {} ==\n{}\n", t.problem_id, t.dump);
    nlohmann::ordered_json jt;
    jt["problem_id"] = t.problem_id;
    jt["solved_at_turn"] = t.solved_at_turn;
    jt["generated_per_turn"] = t.generated_per_turn;
    jt["retained_per_turn"] = t.retained_per_turn;
    jt["expansions_skipped"] = t.expansions_skipped;
    auto nodes = nlohmann::ordered_json::array();
    for (size_t id = 0; id < t.records.size(); ++id) {
      const RolloutRecord& r = rollouts_[t.records[id]];
      nlohmann::ordered_json jn;
      jn["node"] = id;
      jn["parent"] = r.parent_node;
      jn["turn"] = r.turn;
      jn["r"] = r.turn_reward;
      jn["R_credited"] = r.credited_reward;
      jn["advantage"] = r.advantage;
      jn["retained"] = r.retained;
      jn["loss_weight"] = r.loss_weight;
      jn["mode"] = r.route_error.empty() ? credit::FailureModeName(r.route.mode) : "ERROR";
      jn["feedback"] = r.feedback;
      jn["rollout_index"] = t.records[id];
      nodes.push_back(jn);
    }
    jt["nodes"] = nodes;
    all.push_back(jt);
  }
  EGCA_RETURN_IF_ERROR(WriteFileAtomic(fmt::format("{}/trees/step-{}.txt", c.run_dir, step_), text));
  return WriteFileAtomic(fmt::format("{}/trees/step-{}.json", c.run_dir, step_),
                         all.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
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
    // The last step is always evaluated (when evaluation is on) so a run ends with its
    // final score even when steps is not a multiple of eval_every.
    if (c.eval_every > 0 && !impl_->eval.empty() && (step_ % c.eval_every == 0 || step_ == c.steps)) {
      EGCA_RETURN_IF_ERROR(Evaluate().status());
    }
    if ((c.save_every > 0 && step_ % c.save_every == 0) || step_ == c.steps) {
      EGCA_RETURN_IF_ERROR(SaveCheckpoint());
    }
  }
  return Status::Ok();
}

}  // namespace egca::trainer
