// Sampling: a group of completions per prompt (the policy, or a RolloutSource), each
// completion's token byte ranges, and routing overlapped with the next chunk's generation.
#include "grpo_trainer_impl.h"

#include <algorithm>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "egca/core/mix.h"

namespace egca::trainer {

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
    CompletionLogProbs lp =
        policy.ScoreCompletions({score_prompts.begin() + b, score_prompts.begin() + e},
                                {score_completions.begin() + b, score_completions.begin() + e});
    at::Tensor cpu = lp.log_probs.to(at::kCPU).contiguous();
    auto a = cpu.accessor<float, 2>();
    for (size_t i = b; i < e; ++i) {
      out[i].policy_log_probs.resize(out[i].token_ids.size());
      out[i].sampling_log_probs.assign(out[i].token_ids.size(), 0.0f);
      for (size_t t = 0; t < out[i].token_ids.size(); ++t)
        out[i].policy_log_probs[t] = a[static_cast<int64_t>(i - b)][static_cast<int64_t>(t)];
    }
  }
  return out;
}

SamplingOptions GrpoTrainer::Impl::Sampling(uint64_t seed, int64_t g, double temperature,
                                            double top_p, int64_t max_new) const {
  SamplingOptions s;
  s.set_num_samples_per_prompt(g)
      .set_max_new_tokens(max_new)
      .set_temperature(temperature)
      .set_top_p(top_p)
      .set_top_k(config.top_k)
      .set_seed(seed)
      .set_stop_token_ids(stop_ids)
      .set_stop_strings(config.stop_strings)
      .set_tokenizer(*tokenizer);
  return s;
}

// Samples `g` completions for every job, generation_chunk jobs at a time, and routes each
// chunk's samples on the pool while the next chunk generates. Appends g records per job
// (job-major) to *records and waits for every route before returning.
Status GrpoTrainer::Impl::GenerateAndRoute(DecoderModel& policy, const std::vector<PromptJob>& jobs,
                                           int64_t g, int64_t step, int64_t turn,
                                           std::vector<RolloutRecord>* records,
                                           StepTimings* timing) {
  const size_t base = records->size();
  records->resize(base + jobs.size() * static_cast<size_t>(g));  // no reallocation below
  const int64_t n = static_cast<int64_t>(jobs.size());
  const int64_t chunk =
      config.generation_chunk > 0 ? config.generation_chunk : std::max<int64_t>(n, 1);
  std::mutex route_mu;
  double route_busy = 0;
  // Sampling streams keyed by the prompt's place in the global step, not in this call, so
  // that R ranks draw what one process would (dist/): turn 1 by the global prompt position,
  // later turns by (global prompt, k-th revision of that prompt in this turn).
  const int64_t first_global = distribution->ShardOf(config.prompts_per_step).begin;
  std::vector<uint64_t> keys(jobs.size());
  {
    std::map<int64_t, uint64_t> revisions;
    for (size_t j = 0; j < jobs.size(); ++j) {
      const auto global = static_cast<uint64_t>(first_global + jobs[j].group);
      keys[j] = turn == 1 ? global : (global << 16) + revisions[jobs[j].group]++;
    }
  }
  for (int64_t first = 0, chunk_index = 0; first < n; first += chunk, ++chunk_index) {
    const int64_t last = std::min(n, first + chunk);
    std::vector<std::vector<int32_t>> prompts;
    std::vector<std::string> ids;
    for (int64_t j = first; j < last; ++j) {
      prompts.push_back(jobs[static_cast<size_t>(j)].prompt_ids);
      ids.push_back(jobs[static_cast<size_t>(j)].source_id);
    }
    // One seed per (step, turn); the streams differ by prompt key (above), whatever the
    // chunk or the rank.
    (void)chunk_index;
    const uint64_t seed =
        SplitMix64(config.seed ^ SplitMix64((static_cast<uint64_t>(step) << 20) +
                                            (static_cast<uint64_t>(turn - 1) << 12)));
    SamplingOptions so = Sampling(seed, g, config.temperature, config.top_p, config.max_new_tokens);
    so.prompt_keys.assign(keys.begin() + first, keys.begin() + last);
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
      RolloutRecord& r = (*records)[base + static_cast<size_t>((first + comp.prompt_index) * g +
                                                               comp.sample_index)];
      r.problem_id = job.problem->record.id;
      r.group = job.group;
      r.sample = comp.sample_index;
      r.turn = job.turn;
      r.prompt_ids = job.prompt_ids;
      r.prompt_text = job.prompt_text;
      r.parent_node = job.parent_record;  // a record index until the trees are numbered
      r.finish = comp.finish_reason;
      const int64_t cut = comp.finish_reason == FinishReason::kStopString
                              ? static_cast<int64_t>(comp.text.size())
                              : -1;
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

Status GrpoTrainer::Impl::RolloutGroups(DecoderModel& policy, const std::vector<size_t>& batch,
                                        int64_t step, std::vector<RolloutRecord>* records,
                                        StepTimings* timing) {
  std::vector<PromptJob> jobs;
  for (size_t p = 0; p < batch.size(); ++p) {
    TrainProblem& problem = train[batch[p]];
    jobs.push_back({&problem, problem.prompt_ids, problem.prompt_text, problem.record.id,
                    static_cast<int64_t>(p), 1, -1});
  }
  return GenerateAndRoute(policy, jobs, config.group_size, step, 1, records, timing);
}

}  // namespace egca::trainer
