// GrpoTrainer: GRPO with execution-grounded token credit (EGCA), CPU or GPU; one process
// today, several through dist::Distribution (egca/trainer/dist/distribution.h).
//
// One step reads top to bottom (GrpoTrainer::Step, trainer/src/rl/grpo_step.cpp; each stage
// has a source of its own, listed in trainer/src/rl/grpo_trainer_impl.h):
//   1. prompts   the next prompts_per_step problems of the (per-epoch shuffled) training set,
//                formatted with the chat template (+ the constraints suffix, EGCA eq. 4);
//                with several processes, this rank's shard of them;
//   2. rollout   G completions per prompt (Generate, or a RolloutSource), program extracted
//                with its byte offset in the completion;
//   3. route     every sample by its problem's language (ProgramRouter: gates::Router for
//                Python, cpp::CppRouter for C++) on `route.workers` sandboxed executors
//                (created before any model is loaded), overlapping generation of the next
//                chunk of prompts; R = R_hat * I_C (EGCA eq. 1); group advantages (eq. 2 or
//                mean/std);
//   4. credit    token advantages a_{i,t} (EGCA eq. 6) for the configured target;
//   5. update    mu passes of AdamW over the rollout batch in micro-batches, loss GrpoLoss
//                (clipped surrogate + k3 KL to a frozen reference), gradients summed over
//                ranks, gradient clipping, warm-up + linear decay;
//   6. log       metrics.jsonl, TensorBoard, the progress line, rollouts/step-N.jsonl;
//   7. save      checkpoints/step-N (Hugging Face layout + trainer state) every save_every.
// Multi-turn (multi_turn.turns = T > 1, Murphy): step 2 grows one rollout tree per prompt.
// Every node is routed; r = R_hat (fraction of tests passed); a node with r = 1 is solved.
// Each failed node of turn t < T is re-prompted with the task, its output and the
// executor's feedback (multi_turn.feedback) and G_t children are sampled from that prompt.
// Then pruning (IntraP / InterP), backup (MaRS / MeRS) and node-wise GRPO advantages
// (credit/murphy.h), or the GRPO-MT / MT-GRPO baselines; the loss sums one GRPO loss per
// retained response group (w_i = 1 / group size), each node trained on its own prompt with
// only its generated tokens in the loss; EGCA token credit applies inside every node.
// The run directory: config.yaml (effective config), metrics.jsonl, tensorboard/,
// rollouts/, checkpoints/step-N/{config.json, model.safetensors, optimizer.pt,
// trainer_state.json}, eval/step-N.json.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "egca/core/status.h"
#include "egca/credit/token_credit.h"
#include "egca/datasets/problem.h"
#include "egca/gates/router.h"
#include "egca/trainer/dist/distribution.h"
#include "egca/trainer/policy/model.h"
#include "egca/trainer/policy/sampler.h"
#include "egca/trainer/policy/tokenizer.h"
#include "egca/trainer/rl/grpo_config.h"
#include "egca/trainer/rl/metrics_log.h"

namespace egca::trainer {

// Where completions come from. The default samples the policy (Generate); tests and
// benchmarks substitute fixed completions to exercise routing, credit and the update on
// realistic programs (a random tiny model writes no code). Result order and fields as
// Generate's; policy_log_probs must be the policy's log-probs of the tokens (pi_old).
class RolloutSource {
 public:
  virtual ~RolloutSource() = default;
  // `problem_ids[i]` is the problem of prompts[i].
  virtual StatusOr<std::vector<Completion>> Sample(DecoderModel& policy,
                                                   const std::vector<std::string>& problem_ids,
                                                   const std::vector<std::vector<int32_t>>& prompts,
                                                   const SamplingOptions& options) = 0;
};

// Completions given as text per problem id (sample j of a group takes texts[j % size]);
// multi-turn revisions ask for "<id>#turn<t>" and get that key's texts, else the id's;
// tokens from the tokenizer (special tokens not parsed), log-probs by teacher forcing.
class FixedRolloutSource : public RolloutSource {
 public:
  FixedRolloutSource(const Tokenizer& tokenizer,
                     std::map<std::string, std::vector<std::string>> texts)
      : tokenizer_(tokenizer), texts_(std::move(texts)) {}
  StatusOr<std::vector<Completion>> Sample(DecoderModel& policy,
                                           const std::vector<std::string>& problem_ids,
                                           const std::vector<std::vector<int32_t>>& prompts,
                                           const SamplingOptions& options) override;

 private:
  const Tokenizer& tokenizer_;  // Borrowed.
  std::map<std::string, std::vector<std::string>> texts_;
};

// One routed and credited sample of a step.
struct RolloutRecord {
  std::string problem_id;
  int64_t group = 0;   // index of the prompt in the step
  int64_t sample = 0;  // 0 .. G-1
  std::vector<int32_t> token_ids;
  std::vector<float> old_log_probs;                 // pi_old per token
  std::vector<credit::TokenByteRange> token_bytes;  // into `completion`
  std::string completion;  // the text routed (raw token bytes, cut at a stop string)
  FinishReason finish = FinishReason::kMaxTokens;
  std::string program;      // what was run
  int64_t code_offset = 0;  // completion byte of program byte 0 (ProgramOf)
  gates::RouteResult route;
  std::string route_error;      // egca's own failure routing it (reward 0, uniform credit)
  double reward = 0;            // R = R_hat * I_C (reward.kind = reflexicoder: R_overall)
  std::string reflection_note;  // reflexicoder: the reward's terms, or why the format failed
  double advantage = 0;         // A_i
  credit::TokenCredit credit;   // a_{i,t}

  // What the completion was generated from (the problem's prompt, or at turn t > 1 the
  // task + previous output + feedback prompt of its parent).
  std::vector<int32_t> prompt_ids;
  std::string prompt_text;
  // Multi-turn trees (multi_turn.turns > 1); single-turn records are turn-1 roots.
  int64_t turn = 1;
  int64_t node = -1;           // node id in its prompt's tree (credit::MurphyTree)
  int64_t parent_node = -1;    // -1: a response to the problem's prompt
  std::string feedback;        // the feedback this node's failure produced (when expanded)
  bool retained = true;        // false: pruned, not trained on
  double turn_reward = 0;      // r: R_hat (0 for a route error); solved when 1
  double credited_reward = 0;  // the reward the advantage came from (R~ after backup)
  double loss_weight = 1;      // w_i of GrpoLossOptions::sample_weights (1 / group size)
};

// One prompt's rollout tree of a multi-turn step, with what was computed on it.
struct RolloutTree {
  std::string problem_id;
  std::vector<size_t> records;  // node id -> index into last_rollouts()
  std::string dump;             // credit::DumpMurphyTree with R~ and A
  std::vector<int64_t> generated_per_turn, retained_per_turn;
  int64_t solved_at_turn = 0;      // first turn with a solved node (0: unsolved)
  int64_t expansions_skipped = 0;  // failed nodes whose revision prompt was too long
};

// Counters of a step's rollouts, the basis of the metrics (exposed for tests and benches).
struct StepTimings {
  double generate = 0, route = 0, route_wait = 0, credit = 0, update = 0, total = 0;
  double feedback = 0;  // multi-turn: building feedback (hooks, the expert model)
};

class GrpoTrainer {
 public:
  struct Options {
    bool resume = false;     // continue the run in config.run_dir from its latest checkpoint
    bool overwrite = false;  // replace an existing run directory
    bool progress = true;    // the progress line on stderr
    std::shared_ptr<RolloutSource> rollouts;  // null: sample the policy
    // One process or many (rank, shards, collectives); null: dist::SingleProcess.
    std::shared_ptr<dist::Distribution> distribution;
  };

  // Checks everything before writing anything: the config, the data (bad records reported
  // on stderr and skipped; no usable problem is an error), the tokenizer, every prompt's
  // length, the run directory (exists: needs resume or overwrite), the model files. Then
  // starts the executors, loads the policy (and the reference when beta > 0), and writes
  // config.yaml. Errors name the file, key or problem.
  static StatusOr<std::unique_ptr<GrpoTrainer>> Create(const GrpoConfig& config, Options options);
  ~GrpoTrainer();

  // Steps until config.steps, evaluating and saving as configured; a final checkpoint.
  Status Train();
  // One step (see the file comment); returns the step's metrics.
  StatusOr<Scalars> Step();
  // pass@1 greedy and pass@k (n = eval.samples) on the evaluation problems. The writer's
  // (Train calls it on the writer only: it logs and writes eval/step-N.json).
  StatusOr<Scalars> Evaluate();
  // Writes checkpoints/step-<step> (atomically: a killed save leaves the previous one); the
  // writer writes, every rank returns after it has (a collective: every rank calls it).
  Status SaveCheckpoint();

  int64_t step() const { return step_; }
  DecoderModel& policy() { return *policy_; }
  const std::vector<RolloutRecord>& last_rollouts() const { return rollouts_; }
  const std::vector<RolloutTree>& last_trees() const { return trees_; }
  const StepTimings& last_timings() const { return timings_; }
  const GrpoConfig& config() const { return config_; }

 private:
  struct Impl;
  friend class MultiAgentTrainer;  // reuses Impl's problems, executors and update (issue 24)
  GrpoTrainer(GrpoConfig config, Options options);
  Status AddTreeMetrics(Scalars* m) const;  // summed over ranks
  Status DumpTrees() const;                 // every rank calls it; the writer writes

  GrpoConfig config_;
  Options options_;
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<DecoderModel> policy_;
  int64_t step_ = 0;
  std::vector<RolloutRecord> rollouts_;
  std::vector<RolloutTree> trees_;
  StepTimings timings_;
};

// Byte ranges of generated tokens in the text they decode to (special tokens zero-width),
// and that text. Where the concatenated token bytes are not valid UTF-8 the lossy decode is
// used and ranges are clamped to it. `cut` (>= 0): the text is cut there (stop string).
std::pair<std::string, std::vector<credit::TokenByteRange>> CompletionTokenBytes(
    const Tokenizer& tokenizer, const std::vector<int32_t>& ids, int64_t cut = -1);

// Learning rate at optimizer step `step` (0-based): linear warm-up over `warmup` steps to
// `peak`, then (decay) linear to 0 at `total`.
double ScheduledLearningRate(double peak, int64_t step, int64_t warmup, int64_t total, bool decay);

}  // namespace egca::trainer
