// GrpoTrainer::Impl: the trainer's state and the pieces one step is made of, shared by the
// rl/ sources that implement them (private to trainer/src/rl). Where each piece lives:
//   problem_set.cpp      the training / evaluation problems and their prompts; which
//                        problems a step takes (per-epoch shuffles, this rank's shard)
//   rollout.cpp          sampling a group per prompt (Generate or a RolloutSource), the
//                        completion's token byte ranges; routing overlapped with generation
//   routing.cpp          one sample through the executors: program, route, reward, spans
//   advantages.cpp       group advantages (single-turn) and token credit a_{i,t}
//   multi_turn_tree.cpp  Murphy / GRPO-MT / MT-GRPO trees: revision prompts, tree credit
//   policy_update.cpp    the optimization step: mu passes of AdamW over micro-batches
//   step_report.cpp      a step's metrics, rollout dump and progress line
//   grpo_step.cpp        GrpoTrainer::Step, top to bottom
//   grpo_run.cpp         Create (checks, models, resume), Train, SaveCheckpoint
//   grpo_evaluate.cpp    GrpoTrainer::Evaluate (pass@1 greedy, pass@k)
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <torch/optim/adamw.h>

#include "egca/credit/token_credit.h"
#include "egca/datasets/problem.h"
#include "egca/gates/router.h"
#include "egca/trainer/dist/distribution.h"
#include "egca/trainer/policy/chat_template.h"
#include "egca/trainer/policy/model.h"
#include "egca/trainer/policy/sampler.h"
#include "egca/trainer/policy/tokenizer.h"
#include "egca/trainer/rl/grpo_config.h"
#include "egca/trainer/rl/dynamic_sampling.h"
#include "egca/trainer/rl/grpo_trainer.h"
#include "egca/trainer/rl/metrics_log.h"
#include "egca/trainer/rl/program_router.h"
#include "route_pool.h"

namespace egca::trainer {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::time_point since) {
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
  std::shared_ptr<gates::ReferenceCache> cache =
      std::make_shared<gates::ReferenceCache>();  // Python's
  bool reference_prepared = false;
};

// The instruction before a problem's statement, and after a failed attempt's feedback.
inline const std::string& InstructionFor(const GrpoConfig& c, Language language) {
  return language == Language::kCpp ? c.instruction_cpp : c.instruction;
}
inline const std::string& RevisionInstructionFor(const GrpoConfig& c, Language language) {
  return language == Language::kCpp ? c.revision_instruction_cpp : c.revision_instruction;
}

// What credit assignment hands to the update and the metrics: the records the loss sees and
// the group statistics of the step.
struct StepCredit {
  std::vector<size_t> train;  // indices into the step's records, in order
  int64_t zero_variance_groups = 0, groups_total = 0;
  std::vector<double> group_reward_std;  // per group
  credit::TokenCreditStats stats;
  double span_fraction_sum = 0;  // localized samples: span tokens / completion tokens
  int64_t span_fraction_n = 0;
  DynamicSamplingStats sampling;  // rollout.dynamic_sampling's counts (zeros when off)
};

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
  std::vector<TrainProblem*> step_problems;          // the current step's problems (Borrowed)
  std::vector<int64_t> skipped_expansions;           // per prompt of the step
  std::shared_ptr<dist::Distribution> distribution;  // never null (dist::SingleProcess by default)
  dist::Distribution::CommStats comm_reported;       // what the last step's metrics counted

  // ---- problems and prompts (problem_set.cpp) --------------------------------------------

  // Problems of a file, with their prompts; bad ones reported and skipped.
  StatusOr<std::vector<TrainProblem>> LoadProblemSet(const std::string& path,
                                                     const std::string& format, int64_t limit,
                                                     const char* key);

  // Problem indices of step `step`: the concatenation of per-epoch shuffles of the set.
  std::vector<size_t> ProblemsOfStep(int64_t step) const;

  // This rank's share of ProblemsOfStep(step) (dist::Distribution::ShardOf).
  std::vector<size_t> LocalProblemsOfStep(int64_t step) const;

  // ---- routing (routing.cpp) ---------------------------------------------------------------

  RouteSettings SettingsFor(const TrainProblem& p, bool localize) const;

  // Fills a record from a completion and routes it (in a pool worker).
  void RouteRecord(int worker, TrainProblem& problem, RolloutRecord* r, bool localize);

  // Routes the program of `text`, which starts at completion byte `offset`, into r->route
  // with its spans in completion bytes.
  void RouteText(int worker, TrainProblem& problem, const std::string& text, int64_t offset,
                 RolloutRecord* r, bool localize);

  // ReflexiCoder (reward.kind = reflexicoder): the completion is <think>, <answer>, then
  // (<reflection>, <answer>)*; every answer is graded (r_t = fraction of tests passed), the
  // reward is R_overall of credit::ComputeReflectionReward (0 when the format is wrong), and
  // the route (mode, spans for token credit) is the final answer's.
  void RouteReflection(int worker, TrainProblem& problem, RolloutRecord* r, bool localize);

  // Starts computing the reference's trace of each of the step's problems on the pool
  // (routing computes what it lacks; this only overlaps it with generation).
  void PrepareReferences(const std::vector<size_t>& batch);

  // ---- rollout (rollout.cpp) ---------------------------------------------------------------

  // One prompt to sample a group from: a problem's prompt, or a node's revision prompt.
  struct PromptJob {
    TrainProblem* problem = nullptr;  // Borrowed.
    std::vector<int32_t> prompt_ids;
    std::string prompt_text;
    std::string source_id;  // the id a RolloutSource sees ("<id>#turn<t>" after turn 1)
    int64_t group = 0;      // index of the problem in the step
    int64_t turn = 1;
    int64_t parent_record = -1;  // index into the step's records (-1: the problem's prompt)
  };

  SamplingOptions Sampling(uint64_t seed, int64_t g, double temperature, double top_p,
                           int64_t max_new) const;

  // Samples `g` completions for every job, generation_chunk jobs at a time, and routes each
  // chunk's samples on the pool while the next chunk generates. Appends g records per job
  // (job-major) to *records and waits for every route before returning.
  Status GenerateAndRoute(DecoderModel& policy, const std::vector<PromptJob>& jobs, int64_t g,
                          int64_t step, int64_t turn, std::vector<RolloutRecord>* records,
                          StepTimings* timing);

  // Turn 1 of a step: a group of G completions for every problem of `batch`, routed.
  Status RolloutGroups(DecoderModel& policy, const std::vector<size_t>& batch, int64_t step,
                       std::vector<RolloutRecord>* records, StepTimings* timing);

  // Dynamic sampling (dynamic_sampling.cpp, rl/dynamic_sampling.h): samples *batch, drops
  // groups whose rewards are all equal, refills from RefillOrder(step) within the cap; on
  // return *batch and *records hold the kept groups only (groups renumbered 0..).
  Status RolloutWithDynamicSampling(DecoderModel& policy, std::vector<size_t>* batch, int64_t step,
                                    std::vector<RolloutRecord>* records, StepTimings* timing,
                                    DynamicSamplingStats* stats);

  // ---- credit (advantages.cpp, multi_turn_tree.cpp) ------------------------------------

  // Single-turn: group advantages A_i (EGCA eq. 2 or mean/std) of every prompt's G samples;
  // every record is trained on.
  void GroupAdvantages(int64_t n_prompts, std::vector<RolloutRecord>* records,
                       StepCredit* sc) const;
  // Token credit a_{i,t} (EGCA eq. 6) of every trained record, for the configured target.
  Status AssignTokenCredit(int64_t step, std::vector<RolloutRecord>* records, StepCredit* sc) const;

  // The user message that asks for a revision of record `r` (nullopt: none can be built,
  // e.g. the hook failed; the error is reported and the node is not expanded).
  StatusOr<std::string> RevisionUserMessage(const TrainProblem& problem, const RolloutRecord& r,
                                            const std::string& expert_text,
                                            std::string* feedback_out);

  // expert_edits: the expert model's proposals for every record in `which` (greedy).
  StatusOr<std::vector<std::string>> ExpertProposals(const std::vector<RolloutRecord>& records,
                                                     const std::vector<size_t>& which,
                                                     int64_t step);

  const TrainProblem* problem_of_record(const RolloutRecord& r) const {
    return step_problems[static_cast<size_t>(r.group)];
  }

  // Turns 2..T: every failed node of the previous turn gets a revision prompt and a group of
  // G_t children. Records keep the step's order: all of turn 1, then all of turn 2, ...
  Status GrowTrees(DecoderModel& policy, const std::vector<size_t>& batch, int64_t step,
                   std::vector<RolloutRecord>* records, StepTimings* timing);

  // Numbers every prompt's nodes into a credit::MurphyTree, prunes, backs up and computes
  // the advantages and loss weights of the configured method.
  Status CreditTrees(int64_t n_prompts, std::vector<RolloutRecord>* records,
                     std::vector<RolloutTree>* trees, StepCredit* sc);

  // ---- update (policy_update.cpp) --------------------------------------------------------

  struct UpdateStats {
    double loss = 0, kl = 0, clip_low = 0, clip_high = 0, entropy = 0, grad_norm = 0, ratio_max = 0,
           lr = 0;
    // Issue 23: KL(pi before || pi after the step) per token (k3, on the step's tokens), and
    // the entropy at divergent tokens (rl/cancellation.h's DivergentTokenMask).
    double update_kl = 0, entropy_divergent = 0;
    int64_t divergent_tokens = 0;
  };

  // mu passes of AdamW over records[train], in micro-batches whose gradients add up to the
  // batch's: loss = (1 / batch_samples) sum_i w_i sum_t l_{i,t} (w_i = loss_weight when
  // `weighted`, else 1; times loss.normalization's weight, rl/loss_normalization.h).
  Status UpdatePolicy(DecoderModel& policy, const std::vector<RolloutRecord>& records,
                      const std::vector<size_t>& train_set, int64_t batch_samples, bool weighted,
                      UpdateStats* us);

  // The sum of `local` over ranks (world size 1: `local`).
  StatusOr<int64_t> SumOverRanks(int64_t local) const;

  // ---- report (step_report.cpp) ----------------------------------------------------------

  // The metrics of the step just taken (names as TRL's where the meaning is the same), over
  // the trained samples of every rank; the writer logs them, dumps the rollouts (and trees)
  // and prints the progress line.
  StatusOr<Scalars> ReportStep(GrpoTrainer& t, const std::vector<size_t>& batch,
                               const StepCredit& sc, const UpdateStats& us);
};

}  // namespace egca::trainer
