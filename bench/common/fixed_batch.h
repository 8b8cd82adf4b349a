// The deterministic GRPO batch the training-step benchmarks use (train_step, dist_allreduce;
// train_step_baseline.py builds the same in Python): token (b, t) = ((b * seq + t) * 13 + 7)
// mod vocab, the first `prompt` tokens of a row its prompt, and advantage (b, t) of the
// completion = ((b * 7 + t) mod 11 - 5) / (10 * width).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace egca::bench {

inline int32_t FixedTokenId(int64_t row, int64_t pos, int64_t seq, int64_t vocab) {
  return static_cast<int32_t>(((row * seq + pos) * 13 + 7) % vocab);
}

struct FixedBatch {
  std::vector<std::vector<int32_t>> prompts, completions;
  at::Tensor advantages;  // [batch, seq - prompt], float32, on the CPU
};

inline FixedBatch MakeFixedBatch(int64_t batch, int64_t seq, int64_t prompt, int64_t vocab) {
  FixedBatch fb;
  fb.prompts.resize(batch);
  fb.completions.resize(batch);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < seq; ++t) {
      (t < prompt ? fb.prompts[b] : fb.completions[b]).push_back(FixedTokenId(b, t, seq, vocab));
    }
  }
  const int64_t width = seq - prompt;
  fb.advantages = at::empty({batch, width}, at::kFloat);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < width; ++t) {
      fb.advantages[b][t] =
          static_cast<float>(((b * 7 + t) % 11) - 5) / (10.0f * static_cast<float>(width));
    }
  }
  return fb;
}

}  // namespace egca::bench
