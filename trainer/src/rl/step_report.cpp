// What a step reports: its metrics (names as TRL's where the meaning is the same) over the
// trained samples of every rank, the rollout dump (rollouts/step-N.jsonl), the trees
// (multi-turn) and the progress line.
#include "grpo_trainer_impl.h"

#include <algorithm>
#include <iterator>
#include <string_view>
#include <cstdio>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/credit/grpo.h"
#include "egca/trainer/rl/cancellation.h"

namespace egca::trainer {

namespace {

// The exception kinds the SYNTAX metrics name (mode/syntax/<kind>); any other is "other".
// SyntaxError covers every program that does not compile.
constexpr const char* kSyntaxKinds[] = {"SyntaxError", "NameError", "UnboundLocalError",
                                        "AttributeError", "TypeError"};

size_t SyntaxKindIndex(const gates::RouteResult& route) {
  std::string_view kind = route.error_type;
  if (kind == "IndentationError" || kind == "TabError") kind = "SyntaxError";
  for (size_t k = 0; k < std::size(kSyntaxKinds); ++k) {
    if (kind == kSyntaxKinds[k]) return k;
  }
  return std::size(kSyntaxKinds);
}

std::string SpanJson(const std::optional<SourceSpan>& span) {
  if (!span) return "null";
  return fmt::format(R"({{"begin":{},"end":{},"line":{},"end_line":{}}})", span->begin_byte,
                     span->end_byte, span->begin.line, span->end.line);
}

// The cancellation diagnostic (rl/cancellation.h) over the step's single-turn groups: uniform
// GRPO's net update on the samples the step drew, whatever the credit target trains on.
CancellationSums StepCancellation(const std::vector<RolloutRecord>& records,
                                  const std::vector<size_t>& train) {
  std::map<int64_t, std::vector<CancellationSample>> groups;
  for (size_t i : train) {
    const RolloutRecord& r = records[i];
    if (!r.route_error.empty()) continue;
    groups[r.group].push_back({r.token_ids, r.advantage,
                               DivergentTokenMask(r.token_bytes, r.route.earliest_divergence,
                                                  r.route.mode == credit::FailureMode::kLogic)});
  }
  CancellationSums sums;
  for (const auto& [group, samples] : groups) sums.Add(GroupCancellation(samples));
  return sums;
}

}  // namespace

StatusOr<Scalars> GrpoTrainer::Impl::ReportStep(GrpoTrainer& t, const std::vector<size_t>& batch,
                                                const StepCredit& sc, const UpdateStats& us) {
  const GrpoConfig& c = config;
  const StepTimings& timing = t.timings_;
  const bool multi_turn = c.turns > 1;
  Scalars m;
  std::vector<double> rewards;
  int64_t modes[4] = {0, 0, 0, 0}, route_errors = 0, truncated = 0, tokens = 0, max_tokens = 0,
          passed_all = 0;
  int64_t logic = 0, logic_localized = 0;
  // SYNTAX samples by exception kind (issue 37), in kSyntaxKinds' order; the last is "other".
  int64_t syntax_kinds[std::size(kSyntaxKinds) + 1] = {};
  for (size_t i : sc.train) {
    const RolloutRecord& r = t.rollouts_[i];
    rewards.push_back(r.reward);
    tokens += static_cast<int64_t>(r.token_ids.size());
    max_tokens = std::max<int64_t>(max_tokens, static_cast<int64_t>(r.token_ids.size()));
    if (r.finish == FinishReason::kMaxTokens) ++truncated;
    if (!r.route_error.empty()) {
      ++route_errors;
      continue;
    }
    ++modes[static_cast<int>(r.route.mode)];
    if (r.route.mode == credit::FailureMode::kSyntax) ++syntax_kinds[SyntaxKindIndex(r.route)];
    if (r.route.grading.all_passed()) ++passed_all;
    if (r.route.mode == credit::FailureMode::kLogic) {
      ++logic;
      if (r.route.earliest_divergence) ++logic_localized;
    }
  }
  // Over every rank: counters and sums added, per-sample rewards and per-group std gathered
  // at the writer (world size 1: unchanged).
  credit::TokenCreditStats stats = sc.stats;
  std::vector<double> group_reward_std = sc.group_reward_std;
  int64_t n_train = static_cast<int64_t>(sc.train.size()), groups_total = sc.groups_total,
          zero_variance_groups = sc.zero_variance_groups, span_fraction_n = sc.span_fraction_n;
  double span_fraction_sum = sc.span_fraction_sum;
  int64_t generated_tokens = 0;
  for (const auto& r : t.rollouts_) generated_tokens += static_cast<int64_t>(r.token_ids.size());
  CancellationSums cancel =
      multi_turn ? CancellationSums{} : StepCancellation(t.rollouts_, sc.train);
  DynamicSamplingStats sampling = sc.sampling;
  int64_t divergent_tokens = us.divergent_tokens;
  {
    std::vector<int64_t*> counts = {&modes[0],
                                    &modes[1],
                                    &modes[2],
                                    &modes[3],
                                    &route_errors,
                                    &truncated,
                                    &tokens,
                                    &passed_all,
                                    &logic,
                                    &logic_localized,
                                    &n_train,
                                    &groups_total,
                                    &zero_variance_groups,
                                    &span_fraction_n,
                                    &generated_tokens,
                                    &stats.localized,
                                    &stats.fallback_missing_span,
                                    &stats.fallback_empty_span,
                                    &stats.fallback_no_overlap,
                                    &stats.fallback_low_confidence,
                                    &cancel.tokens,
                                    &cancel.divergent_tokens,
                                    &sampling.sampled_groups,
                                    &sampling.skipped_groups,
                                    &sampling.extra_prompts,
                                    &sampling.refill_rounds,
                                    &sampling.kept_groups,
                                    &stats.logic_spanned,
                                    &stats.logic_spanned_positive,
                                    &stats.withheld};
    for (int64_t& k : syntax_kinds) counts.push_back(&k);
    std::vector<double*> reals = {&span_fraction_sum,         &cancel.gross,
                                  &cancel.net,                &cancel.net_divergent,
                                  &stats.advantage_positive,  &stats.advantage_negative,
                                  &stats.span_credit_positive, &stats.span_credit_negative};
    std::vector<double> sums;
    for (const int64_t* v : counts) sums.push_back(static_cast<double>(*v));
    for (const double* v : reals) sums.push_back(*v);
    sums.push_back(sampling.cap_reached ? 1.0 : 0.0);
    EGCA_RETURN_IF_ERROR(distribution->SumScalars(&sums));
    for (size_t k = 0; k < counts.size(); ++k) *counts[k] = static_cast<int64_t>(sums[k]);
    for (size_t k = 0; k < reals.size(); ++k) *reals[k] = sums[counts.size() + k];
    sampling.cap_reached = sums.back() > 0;
    EGCA_RETURN_IF_ERROR(distribution->GatherToWriter(&rewards));
    EGCA_RETURN_IF_ERROR(distribution->GatherToWriter(&group_reward_std));
    std::vector<double> maxima = {static_cast<double>(max_tokens)};
    EGCA_RETURN_IF_ERROR(distribution->MaxScalars(&maxima));
    max_tokens = static_cast<int64_t>(maxima[0]);
  }
  const auto rs = credit::ComputeGroupStats(rewards);
  const double nn = std::max<double>(1.0, static_cast<double>(n_train));
  m["reward"] = rs.mean;
  m["reward_std"] = rs.std;
  m["reward_std_in_group"] =
      group_reward_std.empty()
          ? 0.0
          : std::accumulate(group_reward_std.begin(), group_reward_std.end(), 0.0) /
                static_cast<double>(group_reward_std.size());
  m["frac_reward_zero_std"] = groups_total > 0 ? static_cast<double>(zero_variance_groups) /
                                                     static_cast<double>(groups_total)
                                               : 0.0;
  m["pass_all_tests"] = static_cast<double>(passed_all) / nn;
  for (int k = 0; k < 4; ++k) {
    std::string name = credit::FailureModeName(static_cast<credit::FailureMode>(k));
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    m["mode/" + name] = static_cast<double>(modes[k]) / nn;
  }
  m["route_errors"] = static_cast<double>(route_errors);
  m["localization/trigger_rate"] =
      logic > 0 ? static_cast<double>(logic_localized) / static_cast<double>(logic) : 0.0;
  m["credit/localized"] = static_cast<double>(stats.localized) / nn;
  m["credit/fallbacks"] = static_cast<double>(stats.fallbacks());
  m["credit/fallback_missing_span"] = static_cast<double>(stats.fallback_missing_span);
  m["credit/fallback_no_overlap"] = static_cast<double>(stats.fallback_no_overlap);
  m["credit/fallback_low_confidence"] = static_cast<double>(stats.fallback_low_confidence);
  m["credit/span_fraction"] =
      span_fraction_n > 0 ? span_fraction_sum / static_cast<double>(span_fraction_n) : 0.0;
  // Issue 37: how often the operator meets a positive LOGIC advantage, where SYNTAX
  // failures come from, and how much of each sign's advantage lands on spans.
  m["credit/positive_logic_share"] =
      stats.logic_spanned > 0
          ? static_cast<double>(stats.logic_spanned_positive) / static_cast<double>(stats.logic_spanned)
          : 0.0;
  m["credit/withheld"] = static_cast<double>(stats.withheld) / nn;
  m["credit/span_mass_positive"] = stats.advantage_positive > 0
                                       ? stats.span_credit_positive / stats.advantage_positive
                                       : 0.0;
  m["credit/span_mass_negative"] = stats.advantage_negative < 0
                                       ? stats.span_credit_negative / stats.advantage_negative
                                       : 0.0;
  for (size_t k = 0; k <= std::size(kSyntaxKinds); ++k) {
    const std::string kind = k < std::size(kSyntaxKinds) ? kSyntaxKinds[k] : "other";
    m["mode/syntax/" + kind] = static_cast<double>(syntax_kinds[k]) / nn;
  }
  m["loss"] = us.loss;
  m["kl"] = us.kl;
  m["clip_ratio/low_mean"] = us.clip_low;
  m["clip_ratio/high_mean"] = us.clip_high;
  m["clip_ratio/region_mean"] = us.clip_low + us.clip_high;
  if (c.mu > 1) m["ratio_max"] = us.ratio_max;
  m["entropy"] = us.entropy;
  // Issue 23: the update's size and where uniform GRPO's update lands after cancellation.
  m["entropy/divergent_tokens"] = us.entropy_divergent;
  m["divergent_tokens"] = static_cast<double>(divergent_tokens);
  if (c.update_kl) m["update/kl"] = us.update_kl;
  if (!multi_turn) {
    m["cancellation/divergent_share"] = cancel.divergent_share();
    m["cancellation/divergent_token_share"] = cancel.divergent_token_share();
    m["cancellation/net_over_gross"] = cancel.net_over_gross();
  }
  if (c.dynamic_sampling) {
    m["dynamic_sampling/sampled_groups"] = static_cast<double>(sampling.sampled_groups);
    m["dynamic_sampling/skipped_groups"] = static_cast<double>(sampling.skipped_groups);
    m["dynamic_sampling/extra_prompts"] = static_cast<double>(sampling.extra_prompts);
    m["dynamic_sampling/refill_rounds"] = static_cast<double>(sampling.refill_rounds);
    m["dynamic_sampling/kept_groups"] = static_cast<double>(sampling.kept_groups);
    m["dynamic_sampling/cap_reached"] = sampling.cap_reached ? 1.0 : 0.0;
  }
  m["grad_norm"] = us.grad_norm;  // before clipping
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
  m["tokens_per_second"] =
      timing.total > 0 ? static_cast<double>(generated_tokens) / timing.total : 0.0;
  if (multi_turn) EGCA_RETURN_IF_ERROR(t.AddTreeMetrics(&m));
  if (distribution->world_size() > 1) {
    // Communication of this process so far, per step (bench/dist_step reads these).
    const dist::Distribution::CommStats cs = distribution->comm_stats();
    m["dist/world_size"] = static_cast<double>(distribution->world_size());
    m["dist/gradient_bytes"] =
        static_cast<double>(cs.gradient_bytes - comm_reported.gradient_bytes);
    m["dist/gradient_wait"] = cs.gradient_wait_seconds - comm_reported.gradient_wait_seconds;
    m["dist/collectives"] = static_cast<double>(cs.collectives - comm_reported.collectives);
    comm_reported = cs;
  }

  // Dumps: built on every rank and gathered to the writer in rank order (global prompt
  // order); only the writer writes the run directory and the progress line.
  const int64_t first_global = distribution->ShardOf(c.prompts_per_step).begin;
  if (c.dump_rollouts) {
    std::string out;
    // Prompt by prompt (a multi-turn tree's turns together), so that the ranks' pieces,
    // gathered in rank order, are the lines one process writes.
    std::vector<size_t> order(t.rollouts_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return t.rollouts_[a].group < t.rollouts_[b].group;
    });
    for (const size_t index : order) {
      const auto& r = t.rollouts_[index];
      nlohmann::ordered_json j;
      const TrainProblem& p = train[batch[static_cast<size_t>(r.group)]];
      j["step"] = t.step_;
      j["problem_id"] = r.problem_id;
      j["origin"] = p.record.origin;
      j["language"] = LanguageName(p.language);
      j["group"] = first_global + r.group;  // the prompt's place in the global step
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
      j["first_failing_test"] =
          r.route.first_failing_test >= 0 ? r.route.first_failing_test + 1 : 0;
      if (!r.route.error_type.empty()) j["error_type"] = r.route.error_type;
      if (!r.route.error_name.empty()) j["error_name"] = r.route.error_name;
      j["spans"] = nlohmann::json::parse(fmt::format(
          R"({{"error":{},"cause":{},"earliest":{},"last":{},"random":{}}})",
          SpanJson(r.route.error_span), SpanJson(r.route.cause_span),
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
    EGCA_RETURN_IF_ERROR(distribution->GatherTextToWriter(&out));
    if (distribution->is_writer()) {
      fs::create_directories(fs::path(c.run_dir) / "rollouts");
      EGCA_RETURN_IF_ERROR(
          WriteFileAtomic(fmt::format("{}/rollouts/step-{}.jsonl", c.run_dir, t.step_), out));
    }
  }
  if (multi_turn && c.dump_trees) EGCA_RETURN_IF_ERROR(t.DumpTrees());
  if (!distribution->is_writer()) return m;
  EGCA_RETURN_IF_ERROR(metrics->Log(t.step_, "train", m));

  if (t.options_.progress) {
    const double elapsed = Seconds(started);
    const double per_step = elapsed / static_cast<double>(steps_this_session);
    const double eta = per_step * static_cast<double>(c.steps - t.step_);
    std::fprintf(stderr,
                 "step %lld/%lld  reward %.3f  pass %.3f  SYNTAX %.2f CONSTRAINT %.2f LOGIC %.2f "
                 "CORRECT %.2f"
                 "  kl %.4f  %.1f s/step (gen %.1f route %.1f upd %.1f)  ETA %.0fs%s\n",
                 static_cast<long long>(t.step_), static_cast<long long>(c.steps), rs.mean,
                 m["pass_all_tests"], m["mode/syntax"], m["mode/constraint"], m["mode/logic"],
                 m["mode/correct"], m["kl"], per_step, timing.generate, timing.route_wait,
                 timing.update, eta,
                 multi_turn ? fmt::format("  nodes {:.0f} -> {:.0f}", m["tree/generated"],
                                          m["tree/retained"])
                                  .c_str()
                            : "");
  }
  return m;
}

}  // namespace egca::trainer
