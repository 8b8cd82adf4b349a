// Multi-turn (Murphy) rollout trees: revision prompts with the executor's feedback (or an
// expert's edits, or a hook's message) for every failed node, the children sampled from
// them, and the tree's credit: pruning, backup, node-wise GRPO advantages (or the GRPO-MT /
// MT-GRPO baselines) and loss weights. Also the trees' metrics and dumps.
#include "grpo_trainer_impl.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/core/mix.h"
#include "egca/credit/grpo.h"
#include "egca/credit/mt_grpo.h"
#include "egca/credit/murphy.h"
#include "egca/trainer/rl/feedback.h"
#include "egca/trainer/rl/problem_prompt.h"

namespace egca::trainer {

// The user message that asks for a revision of record `r` (nullopt: none can be built,
// e.g. the hook failed; the error is reported and the node is not expanded).
StatusOr<std::string> GrpoTrainer::Impl::RevisionUserMessage(const TrainProblem& problem,
                                                             const RolloutRecord& r,
                                                             const std::string& expert_text,
                                                             std::string* feedback_out) {
  FeedbackOptions fo;
  ParseFeedbackMode(config.feedback, &fo.mode);
  fo.sandbox_slice = config.sandbox_slice;
  fo.max_chars = config.feedback_chars;
  std::string execution;
  if (r.route_error.empty())
    execution = ExecutionFeedback(r.route, problem.routing.tests, r.program, fo);
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
      const auto in = FeedbackHookInput::For(problem.user_text, r.turn, r.completion, r.program,
                                             r.route, r.route_error, execution);
      EGCA_ASSIGN_OR_RETURN(std::string message, RunFeedbackHook(config.feedback_command, in));
      *feedback_out = message;
      return message;
    }
  }
  return Internal("unknown feedback mode");
}

// expert_edits: the expert model's proposals for every record in `which` (greedy).
StatusOr<std::vector<std::string>> GrpoTrainer::Impl::ExpertProposals(
    const std::vector<RolloutRecord>& records, const std::vector<size_t>& which, int64_t step) {
  std::vector<std::vector<int32_t>> prompts;
  FeedbackOptions fo;
  fo.mode = FeedbackMode::kLevelFeedback;
  fo.sandbox_slice = config.sandbox_slice;
  fo.max_chars = config.feedback_chars;
  for (size_t i : which) {
    const RolloutRecord& r = records[i];
    const TrainProblem& problem = *problem_of_record(r);
    std::string ask =
        "A programming task, a candidate solution that fails, and what its execution showed. "
        "Propose concise, specific edits that fix the solution. Do not rewrite it.\n\nTask:\n" +
        problem.user_text + "\n\nCandidate solution:\n```" + LanguageName(problem.language) + "\n" +
        r.program + "\n```\n\n";
    if (r.route_error.empty())
      ask += "Execution:\n" + ExecutionFeedback(r.route, problem.routing.tests, r.program, fo);
    EGCA_ASSIGN_OR_RETURN(std::string text, FormatConversation(chat, "", {{"user", ask}}));
    std::vector<int32_t> ids = tokenizer->EncodeIds(text);
    const int64_t keep = std::max<int64_t>(1, expert_context - config.expert_max_new_tokens);
    if (static_cast<int64_t>(ids.size()) > keep)
      ids.erase(ids.begin(), ids.end() - keep);  // keep the end
    prompts.push_back(std::move(ids));
  }
  std::vector<std::string> out(which.size());
  if (prompts.empty()) return out;
  const uint64_t seed = SplitMix64(config.seed ^ 0xE4E27ULL ^ static_cast<uint64_t>(step));
  SamplingOptions so = Sampling(seed, 1, 0.0, 1.0, config.expert_max_new_tokens);
  EGCA_ASSIGN_OR_RETURN(auto completions, Generate(*expert, prompts, so));
  for (const Completion& comp : completions)
    out[static_cast<size_t>(comp.prompt_index)] = comp.text;
  return out;
}

// Turns 2..T: every failed node of the previous turn gets a revision prompt and a group of
// G_t children. Records keep the step's order: all of turn 1, then all of turn 2, ...
Status GrpoTrainer::Impl::GrowTrees(DecoderModel& policy, const std::vector<size_t>& batch,
                                    int64_t step, std::vector<RolloutRecord>* records,
                                    StepTimings* timing) {
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
      EGCA_ASSIGN_OR_RETURN(job.prompt_text, FormatConversation(chat, config.system_prompt,
                                                                {{"user", problem->user_text},
                                                                 {"assistant", r.completion},
                                                                 {"user", *user}}));
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
Status GrpoTrainer::Impl::CreditTrees(int64_t n_prompts, std::vector<RolloutRecord>* records,
                                      std::vector<RolloutTree>* trees, StepCredit* sc) {
  trees->assign(static_cast<size_t>(n_prompts), RolloutTree{});
  std::vector<credit::MurphyTree> murphy(static_cast<size_t>(n_prompts));
  for (size_t i = 0; i < records->size(); ++i) {
    RolloutRecord& r = (*records)[i];
    RolloutTree& t = (*trees)[static_cast<size_t>(r.group)];
    credit::MurphyTree& mt = murphy[static_cast<size_t>(r.group)];
    const int parent = r.parent_node >= 0
                           ? static_cast<int>((*records)[static_cast<size_t>(r.parent_node)].node)
                           : -1;
    r.node =
        mt.AddResponse(parent, r.turn_reward, {}, {}, {}, static_cast<int64_t>(r.token_ids.size()));
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
    for (size_t k = 0; k < sizes.generated_per_turn.size() && k < t.generated_per_turn.size();
         ++k) {
      t.generated_per_turn[k] = sizes.generated_per_turn[k];
      t.retained_per_turn[k] = sizes.retained_per_turn[k];
    }
    for (const auto& node : pruned.nodes) {
      if (pruned.IsSolved(node)) {
        t.solved_at_turn =
            t.solved_at_turn == 0 ? node.turn : std::min<int64_t>(t.solved_at_turn, node.turn);
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
        ++sc->groups_total;
        if (group.stats.all_equal) ++sc->zero_variance_groups;
        sc->group_reward_std.push_back(group.stats.std);
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
      ++sc->groups_total;
      if (stats.all_equal) ++sc->zero_variance_groups;
      sc->group_reward_std.push_back(stats.std);
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
        std::vector<std::vector<double>> intermediate(static_cast<size_t>(K - 1),
                                                      std::vector<double>(paths.size()));
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
            : config.tree_advantage == "grpo_or"
                ? credit::OutcomeOnlyAdvantages(intermediate, outcome, adv_options)
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

Status GrpoTrainer::AddTreeMetrics(Scalars* m) const {
  const GrpoConfig& c = config_;
  std::vector<double> generated(static_cast<size_t>(c.turns), 0),
      retained(static_cast<size_t>(c.turns), 0), solved(static_cast<size_t>(c.turns) + 1, 0);
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
  // Over every rank's trees (world size 1: unchanged).
  double n_trees = static_cast<double>(trees_.size()), skipped_d = static_cast<double>(skipped);
  {
    std::vector<double> sums = {n_trees, skipped_d, before, after, n};
    sums.insert(sums.end(), generated.begin(), generated.end());
    sums.insert(sums.end(), retained.begin(), retained.end());
    sums.insert(sums.end(), solved.begin(), solved.end());
    EGCA_RETURN_IF_ERROR(impl_->distribution->SumScalars(&sums));
    n_trees = sums[0];
    skipped = static_cast<int64_t>(sums[1]);
    before = sums[2];
    after = sums[3];
    n = sums[4];
    size_t k = 5;
    for (auto* v : {&generated, &retained, &solved}) {
      for (double& x : *v) x = sums[k++];
    }
  }
  const double prompts = std::max<double>(1.0, n_trees);
  for (int64_t k = 0; k < c.turns; ++k) {
    (*m)[fmt::format("tree/generated_turn{}", k + 1)] = generated[static_cast<size_t>(k)] / prompts;
    (*m)[fmt::format("tree/retained_turn{}", k + 1)] = retained[static_cast<size_t>(k)] / prompts;
    (*m)[fmt::format("tree/solved_at_turn{}", k + 1)] =
        solved[static_cast<size_t>(k) + 1] / prompts;
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
  return Status::Ok();
}

Status GrpoTrainer::DumpTrees() const {
  const GrpoConfig& c = config_;
  std::string text, json_lines;  // every rank's trees, one JSON object a line
  const int64_t first_global = impl_->distribution->ShardOf(c.prompts_per_step).begin;
  for (const auto& t : trees_) {
    text += fmt::format("== {} ==\n{}\n", t.problem_id, t.dump);
    nlohmann::ordered_json jt;
    jt["problem_id"] = t.problem_id;
    jt["group"] = first_global + static_cast<int64_t>(&t - trees_.data());
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
    json_lines += jt.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  // Gathered to the writer in rank order (= global prompt order), which writes them.
  EGCA_RETURN_IF_ERROR(impl_->distribution->GatherTextToWriter(&text));
  EGCA_RETURN_IF_ERROR(impl_->distribution->GatherTextToWriter(&json_lines));
  if (!impl_->distribution->is_writer()) return Status::Ok();
  fs::create_directories(fs::path(c.run_dir) / "trees");
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (size_t b = 0; b < json_lines.size();) {
    const size_t e = json_lines.find('\n', b);
    all.push_back(nlohmann::ordered_json::parse(json_lines.substr(b, e - b)));
    b = e + 1;
  }
  EGCA_RETURN_IF_ERROR(
      WriteFileAtomic(fmt::format("{}/trees/step-{}.txt", c.run_dir, step_), text));
  return WriteFileAtomic(fmt::format("{}/trees/step-{}.json", c.run_dir, step_),
                         all.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace egca::trainer
