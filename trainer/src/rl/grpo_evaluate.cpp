// GrpoTrainer::Evaluate: pass@1 (greedy) and pass@k (eval.samples per problem) on the
// evaluation problems, graded by the same executors as training (every test must pass).
#include "grpo_trainer_impl.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/core/mix.h"
#include "egca/credit/pass_at_k.h"

namespace egca::trainer {

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
      records[i].completion =
          CompletionTokenBytes(*im.tokenizer, completions[i].token_ids,
                               completions[i].finish_reason == FinishReason::kStopString
                                   ? static_cast<int64_t>(completions[i].text.size())
                                   : -1)
              .first;
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
  auto greedy = im.source ? im.source->Sample(*policy_, ids, prompts,
                                              im.Sampling(seed, 1, 0.0, 1.0, c.eval_max_new_tokens))
                          : Generate(*policy_, prompts,
                                     im.Sampling(seed, 1, 0.0, 1.0, c.eval_max_new_tokens));
  if (!greedy.ok()) return greedy.status();
  std::vector<int64_t> greedy_passed;
  grade(*greedy, 1, &greedy_passed);
  m["pass@1_greedy"] = static_cast<double>(std::count_if(greedy_passed.begin(), greedy_passed.end(),
                                                         [](int64_t x) { return x > 0; })) /
                       static_cast<double>(im.eval.size());
  // Sampled pass@k.
  std::vector<int64_t> sampled_passed;
  // eval.final_samples: the last step's evaluation may draw more samples than the others.
  const int64_t n_samples =
      step_ == c.steps && c.eval_final_samples > 0 ? c.eval_final_samples : c.eval_samples;
  if (n_samples > 1 || c.eval_temperature > 0) {
    const SamplingOptions so = im.Sampling(seed + 1, n_samples, c.eval_temperature,
                                           c.eval_top_p, c.eval_max_new_tokens);
    auto sampled =
        im.source ? im.source->Sample(*policy_, ids, prompts, so) : Generate(*policy_, prompts, so);
    if (!sampled.ok()) return sampled.status();
    grade(*sampled, n_samples, &sampled_passed);
    std::vector<std::pair<int64_t, int64_t>> n_c;
    for (int64_t x : sampled_passed) n_c.emplace_back(n_samples, x);
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
      row["n"] = n_samples;
      row["c"] = sampled_passed[i];
    }
    rows.push_back(row);
  }
  j["problems"] = rows;
  fs::create_directories(fs::path(c.run_dir) / "eval");
  EGCA_RETURN_IF_ERROR(
      WriteFileAtomic(fmt::format("{}/eval/step-{}.json", c.run_dir, step_), j.dump(2) + "\n"));
  if (options_.progress) {
    std::string line = fmt::format("eval step {}:", step_);
    for (const auto& [k, v] : m) line += fmt::format("  {} {:.4g}", k, v);
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  policy_->train();
  return m;
}

}  // namespace egca::trainer
