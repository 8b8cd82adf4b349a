// dist::Distribution: everything the trainer does differently when one training run is
// spread over several processes (data parallelism), behind one small interface. The RL loop
// (rl/) never asks "am I distributed?"; it asks this object which prompts are its own, hands
// it gradients and metric sums, and asks whether it writes the run directory. World size 1
// (SingleProcess, below) makes every call the identity, which is how egca trains today.
//
// The model of a multi-process run: R ranks (processes) 0..R-1, each with a full replica of
// the policy (and reference) and its own sandboxed executors. One global step = the
// prompts_per_step prompts that GrpoTrainer picks for that step (the same list on every
// rank, from the seed); rank r samples, routes and credits the prompts of ShardOf(n) only;
// the loss is normalized by the global number of trained samples (so summing gradients over
// ranks gives exactly the single-process gradient of the whole batch); every rank then
// takes the same optimizer step on the same summed gradient, so replicas stay equal.
//
// Who calls what, when (GrpoTrainer, rl/):
//   Create        BroadcastParameters(policy params) once, after loading (and resuming) the
//                 policy, before the first step. Only the writer creates/clears the run
//                 directory and writes config.yaml; every rank reads checkpoints to resume.
//   Step          ShardOf(prompts_per_step) to select its prompts;
//                 SumScalars({trained samples}) for the loss normalization;
//                 per optimizer pass: BeforeLastBackward(params) before the backward of the
//                 pass's last micro-batch (an implementation may start reducing gradient
//                 buckets during that backward), AllReduceGradients(params) after it, before
//                 gradient clipping; MaxScalars for maxima (ratio_max, longest completion);
//                 SumScalars(counters) and GatherToWriter(per-sample values) for the metrics;
//                 the writer logs metrics.jsonl / TensorBoard and the rollout dump.
//   Train         CheckReplicas(params) every check_every steps; the writer evaluates and
//                 saves checkpoints; Barrier() after each, so no rank runs ahead of a
//                 checkpoint it may have to resume from.
// Every collective (everything but rank/world_size/is_writer/ShardOf) must be called by all
// ranks, in the same order, with the same sizes; a rank that skips one deadlocks the rest.
//
// What rl/ does so that R ranks x B prompts train exactly like 1 rank x R*B prompts (up to
// the order of floating-point sums): sampling streams are keyed by the global prompt
// position (SamplingOptions::prompt_keys), the "random" credit target's seed by the global
// (prompt, sample) position, ratio_max and completions/max_length are maxima over ranks
// (MaxScalars), a rank without trained records still joins every collective of the update,
// and rollout / tree dumps are gathered to the writer (GatherTextToWriter). Evaluation runs
// on the writer alone (the others wait in Barrier, which has no time limit; a dead rank is
// caught by the process-group implementation's heartbeat, see process_group.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "egca/core/status.h"

namespace egca::trainer::dist {

// Positions [begin, end) of a global list (e.g. the prompts of a step).
struct Shard {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// Shard of rank `rank` of `world_size` over `count` items: contiguous, in rank order, sizes
// differing by at most one (the first count % world_size ranks get one more). Ranks past
// the items get an empty shard.
Shard EvenShard(int64_t count, int64_t rank, int64_t world_size);

class Distribution {
 public:
  virtual ~Distribution() = default;

  // This process's rank, 0 .. world_size() - 1, and the number of processes (>= 1).
  virtual int64_t rank() const = 0;
  virtual int64_t world_size() const = 0;

  // The writer: the one rank that writes the run directory's shared files (config.yaml,
  // metrics.jsonl, tensorboard/, rollouts/, trees/, eval/, checkpoints/). Rank 0.
  bool is_writer() const { return rank() == 0; }

  // Which of a global step's `global_count` prompts (positions into the step's prompt list)
  // this rank takes: EvenShard(global_count, rank(), world_size()).
  Shard ShardOf(int64_t global_count) const {
    return EvenShard(global_count, rank(), world_size());
  }

  // Optional overlap of the gradient reduction with backward: called before the backward
  // of each optimizer pass's last micro-batch with the policy's parameters (parameters()
  // order). An implementation may hook the parameters' gradients there and start reducing
  // buckets as soon as they are complete; AllReduceGradients finishes the job. Default: no-op.
  virtual Status BeforeLastBackward(const std::vector<at::Tensor>& params) {
    (void)params;
    return Status::Ok();
  }

  // Sums the parameters' gradients over ranks, element-wise and in place (SUM, not mean:
  // the loss is already divided by the global sample count). `params`: every parameter of
  // the policy, in parameters() order, the same list on every rank. A parameter whose
  // gradient is defined on some rank gets the sum on every rank (zeros where a rank had
  // none); one undefined on every rank stays undefined (AdamW skips it, as in one process).
  // Called once per optimizer pass, after the last micro-batch's backward and before
  // gradient clipping — also by a rank that had nothing to train on this step.
  virtual Status AllReduceGradients(const std::vector<at::Tensor>& params) = 0;

  // Copies the writer's values into every rank's tensors, in place. `params`: the policy's
  // parameters in parameters() order. Called once by GrpoTrainer::Create after the policy
  // is loaded (and resumed).
  virtual Status BroadcastParameters(std::vector<at::Tensor>& params) = 0;

  // Element-wise sum of `values` over ranks; every rank receives the sum (an all-reduce of
  // metric counters and sums: token counts, loss and KL sums, mode counts). Units are the
  // caller's; counts are exact up to 2^53.
  virtual Status SumScalars(std::vector<double>* values) = 0;

  // Element-wise maximum of `values` over ranks; every rank receives it (ratio_max, the
  // longest completion, flags).
  virtual Status MaxScalars(std::vector<double>* values) = 0;

  // Concatenation of every rank's `values`, in rank order, delivered to the writer
  // (per-sample rewards, per-group reward std). Other ranks keep their own values.
  virtual Status GatherToWriter(std::vector<double>* values) = 0;

  // Concatenation of every rank's `text`, in rank order, delivered to the writer (rollout
  // and tree dumps). Other ranks keep their own text.
  virtual Status GatherTextToWriter(std::string* text) = 0;

  // Returns when every rank has called it.
  virtual Status Barrier() = 0;

  // Best effort, on a rank that is about to exit with an error: tells the other ranks why,
  // so that they end at once with that reason instead of waiting for a timeout.
  virtual void Abort(const std::string& reason) { (void)reason; }

  // Checks that every rank holds the same parameters: a checksum of `params` (sum and sum
  // of squares of every tensor, in float64) compared over ranks with MaxScalars. An error
  // naming `step` when they differ (the replicas diverged: e.g. nondeterministic kernels).
  Status CheckReplicas(const std::vector<at::Tensor>& params, int64_t step);

  // Communication done so far by this process (for metrics and bench/): gradient bytes
  // all-reduced, the seconds the training thread spent waiting for gradient reductions
  // (what backward did not hide), and the number of collective calls.
  struct CommStats {
    int64_t gradient_bytes = 0;
    double gradient_wait_seconds = 0;
    int64_t collectives = 0;
  };
  virtual CommStats comm_stats() const { return {}; }
};

// One process: rank 0 of 1; every collective is the identity. What GrpoTrainer uses unless
// GrpoTrainer::Options::distribution names another.
class SingleProcess final : public Distribution {
 public:
  int64_t rank() const override { return 0; }
  int64_t world_size() const override { return 1; }
  Status AllReduceGradients(const std::vector<at::Tensor>& params) override;
  Status BroadcastParameters(std::vector<at::Tensor>& params) override;
  Status SumScalars(std::vector<double>* values) override;
  Status MaxScalars(std::vector<double>* values) override;
  Status GatherToWriter(std::vector<double>* values) override;
  Status GatherTextToWriter(std::string* text) override;
  Status Barrier() override;
};

}  // namespace egca::trainer::dist
