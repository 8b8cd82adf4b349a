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
//                 per optimizer pass: AllReduceGradients(grads) after the backward of every
//                 micro-batch, before gradient clipping;
//                 SumScalars(counters) and GatherToWriter(per-sample values) for the metrics;
//                 the writer logs metrics.jsonl / TensorBoard and the rollout dump.
//   Train         the writer evaluates and saves checkpoints; Barrier() after each, so no
//                 rank runs ahead of a checkpoint it may have to resume from.
// Every collective (everything but rank/world_size/is_writer/ShardOf) must be called by all
// ranks, in the same order, with the same sizes; a rank that skips one deadlocks the rest.
//
// Known gaps a multi-process implementation must close in rl/ (world size 1 is unaffected):
// sampling seeds are derived from (step, turn, chunk index), not the global prompt
// position, so two ranks would draw from the same stream; the "random" credit target's seed
// uses the rank-local sample index; ratio_max and completions/max_length are rank-local;
// UpdatePolicy returns before its collectives when a rank has no trained record; evaluation
// runs on the writer alone.
#pragma once

#include <cstdint>
#include <memory>
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

  // Sums every tensor over ranks, element-wise and in place (SUM, not mean: the loss is
  // already divided by the global sample count). `grads`: the policy parameters' gradients
  // that are defined, in parameters() order, on the training device and dtype; the same
  // list (count, shapes, order) on every rank. Called once per optimizer pass, after the
  // last micro-batch's backward and before gradient clipping.
  virtual Status AllReduceGradients(std::vector<at::Tensor>& grads) = 0;

  // Copies the writer's values into every rank's tensors, in place. `params`: the policy's
  // parameters in parameters() order. Called once by GrpoTrainer::Create after the policy
  // is loaded (and resumed).
  virtual Status BroadcastParameters(std::vector<at::Tensor>& params) = 0;

  // Element-wise sum of `values` over ranks; every rank receives the sum (an all-reduce of
  // metric counters and sums: token counts, loss and KL sums, mode counts). Units are the
  // caller's; counts are exact up to 2^53.
  virtual Status SumScalars(std::vector<double>* values) = 0;

  // Concatenation of every rank's `values`, in rank order, delivered to the writer
  // (per-sample rewards, per-group reward std). Other ranks keep their own values.
  virtual Status GatherToWriter(std::vector<double>* values) = 0;

  // Returns when every rank has called it.
  virtual Status Barrier() = 0;
};

// One process: rank 0 of 1; every collective is the identity. What GrpoTrainer uses unless
// GrpoTrainer::Options::distribution names another.
class SingleProcess final : public Distribution {
 public:
  int64_t rank() const override { return 0; }
  int64_t world_size() const override { return 1; }
  Status AllReduceGradients(std::vector<at::Tensor>& grads) override;
  Status BroadcastParameters(std::vector<at::Tensor>& params) override;
  Status SumScalars(std::vector<double>* values) override;
  Status GatherToWriter(std::vector<double>* values) override;
  Status Barrier() override;
};

}  // namespace egca::trainer::dist
