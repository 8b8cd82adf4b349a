#include "egca/trainer/policy/sampler.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <map>
#include <string>

#include "model_test_util.h"

namespace egca::trainer {
namespace {

using testing::TinyConfig;

std::shared_ptr<DecoderModel> TinyModel(uint64_t seed = 1, double stddev = 0.2) {
  auto m = std::make_shared<DecoderModel>(TinyConfig(ModelFamily::kQwen3));
  m->InitRandom(seed, stddev);
  return m;
}

const std::vector<std::vector<int32_t>> kPrompts = {{5, 17, 300, 42}, {7}, {100, 200, 300}};

std::string DecodeIds(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += "<" + std::to_string(id) + ">";
  return s;
}

std::vector<Completion> MustGenerate(DecoderModel& m,
                                     const std::vector<std::vector<int32_t>>& prompts,
                                     const SamplingOptions& o) {
  auto r = Generate(m, prompts, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<Completion>{};
}

// Next-token logits [T_completion, V] for each completion position, by full recomputation.
at::Tensor TeacherForcedLogits(DecoderModel& m, const std::vector<int32_t>& prompt,
                               const std::vector<int32_t>& completion) {
  at::NoGradGuard no_grad;
  std::vector<int64_t> all(prompt.begin(), prompt.end());
  all.insert(all.end(), completion.begin(), completion.end());
  at::Tensor logits = m.Forward(at::tensor(all, at::kLong).unsqueeze(0))[0];
  return logits.slice(0, prompt.size() - 1, all.size() - 1);
}

TEST(Sampler, SameSeedSameTokensAndBatchCompositionDoesNotMatter) {
  auto m = TinyModel();
  SamplingOptions o;
  o.set_num_samples_per_prompt(3).set_max_new_tokens(12).set_temperature(1.0).set_seed(42);
  auto a = MustGenerate(*m, kPrompts, o);
  auto b = MustGenerate(*m, kPrompts, o);
  ASSERT_EQ(a.size(), 9u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].token_ids, b[i].token_ids);
    EXPECT_EQ(a[i].prompt_index, static_cast<int64_t>(i / 3));
    EXPECT_EQ(a[i].sample_index, static_cast<int64_t>(i % 3));
  }
  // The G samples of one prompt differ from each other.
  EXPECT_NE(a[0].token_ids, a[1].token_ids);

  // A different seed gives different samples.
  auto c = MustGenerate(*m, kPrompts, SamplingOptions(o).set_seed(43));
  EXPECT_NE(a[0].token_ids, c[0].token_ids);

  // Fewer prompts / fewer samples per prompt: the shared completions are unchanged, so a
  // result does not depend on what else was in the batch.
  auto d = MustGenerate(*m, {kPrompts[0], kPrompts[1]},
                        SamplingOptions(o).set_num_samples_per_prompt(2));
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].token_ids, a[0].token_ids);
  EXPECT_EQ(d[1].token_ids, a[1].token_ids);
  EXPECT_EQ(d[2].token_ids, a[3].token_ids);
  EXPECT_EQ(d[3].token_ids, a[4].token_ids);
}

TEST(Sampler, KvCacheAndFullRecomputationAgree) {
  auto m = TinyModel(2);
  SamplingOptions o;
  o.set_num_samples_per_prompt(2).set_max_new_tokens(10).set_seed(7).set_top_k(50);
  auto cached = MustGenerate(*m, kPrompts, o);
  auto recomputed = MustGenerate(*m, kPrompts, SamplingOptions(o).set_use_kv_cache(false));
  ASSERT_EQ(cached.size(), recomputed.size());
  for (size_t i = 0; i < cached.size(); ++i) {
    EXPECT_EQ(cached[i].token_ids, recomputed[i].token_ids);
    for (size_t t = 0; t < cached[i].token_ids.size(); ++t) {
      EXPECT_NEAR(cached[i].policy_log_probs[t], recomputed[i].policy_log_probs[t], 1e-5);
    }
  }
}

// The static-cache decoder (fixed buffers, finished rows compacted) against the decoder
// before it (a KvCache grown by at::cat): the same tokens for a fixed seed, the same
// log-probs up to float rounding, with rows finishing at different steps (stop tokens),
// prompts of different lengths (left padding), greedy, top-k and top-p.
TEST(Sampler, StaticCacheDecoderMatchesTheGrowingCacheDecoder) {
  auto m = TinyModel(4);
  struct Case {
    double temperature, top_p;
    int64_t top_k;
  };
  for (const Case& c : {Case{1.0, 1.0, 0}, Case{0.0, 1.0, 0}, Case{0.9, 0.9, 40}}) {
    SamplingOptions o;
    o.set_num_samples_per_prompt(3)
        .set_max_new_tokens(24)
        .set_temperature(c.temperature)
        .set_top_p(c.top_p)
        .set_top_k(c.top_k)
        .set_seed(11)
        .set_stop_token_ids({3, 9, 27, 81, 243});
    const auto growing = MustGenerate(*m, kPrompts, SamplingOptions(o).set_static_cache(false));
    const auto fixed = MustGenerate(*m, kPrompts, o);
    ASSERT_EQ(growing.size(), fixed.size());
    size_t stopped = 0, total = 0;
    for (size_t i = 0; i < fixed.size(); ++i) {
      EXPECT_EQ(fixed[i].token_ids, growing[i].token_ids) << "completion " << i;
      EXPECT_EQ(fixed[i].finish_reason, growing[i].finish_reason);
      ASSERT_EQ(fixed[i].policy_log_probs.size(), growing[i].policy_log_probs.size());
      for (size_t t = 0; t < fixed[i].token_ids.size(); ++t) {
        EXPECT_NEAR(fixed[i].policy_log_probs[t], growing[i].policy_log_probs[t], 1e-5);
        EXPECT_NEAR(fixed[i].sampling_log_probs[t], growing[i].sampling_log_probs[t], 1e-5);
      }
      stopped += fixed[i].finish_reason == FinishReason::kStopToken;
      total += fixed[i].token_ids.size();
    }
    if (c.temperature > 0) {
      // Rows left the batch at different steps, and some ran to the end.
      EXPECT_GT(stopped, 0u);
      EXPECT_LT(stopped, fixed.size());
    }
    EXPECT_GT(total, fixed.size());
  }
}

TEST(Sampler, PolicyLogProbsEqualTeacherForcedLogProbs) {
  auto m = TinyModel(3);
  SamplingOptions o;
  o.set_num_samples_per_prompt(4)
      .set_max_new_tokens(16)
      .set_temperature(0.8)
      .set_top_p(0.9)
      .set_seed(5)
      .set_stop_token_ids({2});
  auto completions = MustGenerate(*m, kPrompts, o);
  std::vector<std::vector<int32_t>> prompts, outs;
  for (const auto& c : completions) {
    prompts.push_back(kPrompts[c.prompt_index]);
    outs.push_back(c.token_ids);
  }
  at::NoGradGuard no_grad;
  CompletionLogProbs scored = m->ScoreCompletions(prompts, outs);
  float max_diff = 0;
  for (size_t i = 0; i < completions.size(); ++i) {
    for (size_t t = 0; t < outs[i].size(); ++t) {
      max_diff = std::max(max_diff, std::abs(scored.log_probs[i][t].item<float>() -
                                             completions[i].policy_log_probs[t]));
    }
  }
  EXPECT_LE(max_diff, 1e-5);
}

TEST(Sampler, SamplingLogProbsFollowTheModifiedDistribution) {
  auto m = TinyModel(4);
  const double temperature = 0.5;
  const int64_t top_k = 20;
  SamplingOptions o;
  o.set_max_new_tokens(8).set_temperature(temperature).set_top_k(top_k).set_seed(9);
  auto c = MustGenerate(*m, {kPrompts[0]}, o)[0];
  at::Tensor logits = TeacherForcedLogits(*m, kPrompts[0], c.token_ids);
  for (size_t t = 0; t < c.token_ids.size(); ++t) {
    at::Tensor row = logits[t];
    const int32_t tok = c.token_ids[t];
    // Policy: the plain temperature-1 model.
    EXPECT_NEAR(c.policy_log_probs[t], at::log_softmax(row, -1)[tok].item<float>(), 1e-5);
    // Sampling: logits / T restricted to the top k, renormalized.
    at::Tensor scaled = row / temperature;
    at::Tensor kth = std::get<0>(scaled.topk(top_k)).min();
    at::Tensor kept = scaled.masked_fill(scaled.lt(kth), -INFINITY);
    EXPECT_TRUE(std::isfinite(kept[tok].item<float>())) << "sampled outside the top k";
    EXPECT_NEAR(c.sampling_log_probs[t], at::log_softmax(kept, -1)[tok].item<float>(), 1e-5);
  }
  // At temperature 1 without truncation the two coincide.
  auto plain = MustGenerate(*m, {kPrompts[0]}, SamplingOptions().set_max_new_tokens(6))[0];
  for (size_t t = 0; t < plain.token_ids.size(); ++t) {
    EXPECT_NEAR(plain.sampling_log_probs[t], plain.policy_log_probs[t], 1e-6);
  }
}

TEST(Sampler, GreedyPicksTheArgmaxAndTopKOneIsGreedy) {
  auto m = TinyModel(5);
  auto greedy = MustGenerate(*m, {kPrompts[2]},
                             SamplingOptions().set_temperature(0).set_max_new_tokens(10))[0];
  at::Tensor logits = TeacherForcedLogits(*m, kPrompts[2], greedy.token_ids);
  for (size_t t = 0; t < greedy.token_ids.size(); ++t) {
    EXPECT_EQ(greedy.token_ids[t], logits[t].argmax().item<int64_t>());
    EXPECT_EQ(greedy.sampling_log_probs[t], 0.0f);
  }
  auto top1 = MustGenerate(*m, {kPrompts[2]},
                           SamplingOptions().set_top_k(1).set_max_new_tokens(10).set_seed(3))[0];
  EXPECT_EQ(top1.token_ids, greedy.token_ids);
}

// Empirical frequencies of one sampled token against softmax(logits / T) with top-k / top-p,
// computed independently here: checks the inverse-CDF sampler, not just determinism.
TEST(Sampler, EmpiricalFrequenciesMatchTheTruncatedDistribution) {
  ModelConfig c = TinyConfig(ModelFamily::kLlama);
  c.vocab_size = 16;
  DecoderModel m(c);
  m.InitRandom(6, 1.0);  // large weights: a peaked, far-from-uniform distribution
  const std::vector<int32_t> prompt = {3, 1, 4};
  at::Tensor logits;
  {
    at::NoGradGuard no_grad;
    logits = m.Forward(at::tensor(std::vector<int64_t>{3, 1, 4}, at::kLong).unsqueeze(0))[0][2];
  }
  const int64_t n = 6000;
  struct Case {
    double temperature;
    int64_t top_k;
    double top_p;
  };
  for (const Case& cs : {Case{0.7, 0, 1.0}, Case{1.3, 5, 1.0}, Case{1.0, 0, 0.6}}) {
    SCOPED_TRACE(::testing::Message()
                 << "T=" << cs.temperature << " k=" << cs.top_k << " p=" << cs.top_p);
    at::Tensor scaled = logits / cs.temperature;
    auto [sorted, order] = scaled.sort(-1, true);
    at::Tensor probs = at::softmax(sorted, -1);
    std::vector<double> expected(16, 0.0);
    double mass = 0, kept_mass = 0;
    for (int64_t r = 0; r < 16; ++r) {
      if (cs.top_k > 0 && r >= cs.top_k) break;
      if (mass >= cs.top_p) break;
      const double p = probs[r].item<double>();
      expected[order[r].item<int64_t>()] = p;
      mass += p;
      kept_mass += p;
    }
    for (auto& p : expected) p /= kept_mass;
    int support = 0;
    for (double p : expected) support += p > 0.02;
    ASSERT_GE(support, 2) << "degenerate distribution: the test would prove nothing";

    SamplingOptions o;
    o.set_num_samples_per_prompt(n)
        .set_max_new_tokens(1)
        .set_temperature(cs.temperature)
        .set_top_k(cs.top_k)
        .set_top_p(cs.top_p)
        .set_seed(11);
    auto samples = MustGenerate(m, {prompt}, o);
    std::vector<double> counts(16, 0.0);
    for (const auto& s : samples) counts[s.token_ids[0]] += 1;
    for (int64_t v = 0; v < 16; ++v) {
      const double p = expected[v];
      if (p == 0) {
        EXPECT_EQ(counts[v], 0) << "token " << v << " is outside the truncated support";
        continue;
      }
      const double sigma = std::sqrt(p * (1 - p) / n);
      EXPECT_NEAR(counts[v] / n, p, 5 * sigma + 1e-9) << "token " << v;
    }
  }
}

TEST(Sampler, StopTokensStopStringsAndMaxTokens) {
  auto m = TinyModel(7);
  SamplingOptions o;
  o.set_max_new_tokens(20).set_temperature(0).set_decode(DecodeIds);
  auto free_run = MustGenerate(*m, {kPrompts[0]}, o)[0];
  ASSERT_EQ(free_run.token_ids.size(), 20u);
  EXPECT_EQ(free_run.finish_reason, FinishReason::kMaxTokens);
  EXPECT_EQ(free_run.text, DecodeIds(free_run.token_ids));

  // Stop token: the 4th generated token's id, first occurrence.
  const int32_t stop = free_run.token_ids[3];
  size_t first = 0;
  while (free_run.token_ids[first] != stop) ++first;
  auto stopped = MustGenerate(*m, {kPrompts[0]}, SamplingOptions(o).set_stop_token_ids({stop}))[0];
  EXPECT_EQ(stopped.finish_reason, FinishReason::kStopToken);
  ASSERT_EQ(stopped.token_ids.size(), first + 1);  // the stop token itself is kept
  EXPECT_EQ(stopped.token_ids.back(), stop);
  EXPECT_EQ(stopped.policy_log_probs.size(), stopped.token_ids.size());

  // Stop string spanning two tokens: text is cut before it.
  const std::string stop_text = DecodeIds({free_run.token_ids[5], free_run.token_ids[6]});
  const std::string full_text = DecodeIds(free_run.token_ids);
  auto by_string =
      MustGenerate(*m, {kPrompts[0]}, SamplingOptions(o).set_stop_strings({stop_text}))[0];
  EXPECT_EQ(by_string.finish_reason, FinishReason::kStopString);
  EXPECT_EQ(by_string.text, full_text.substr(0, full_text.find(stop_text)));
  EXPECT_LE(by_string.token_ids.size(), 7u);

  auto short_run = MustGenerate(*m, {kPrompts[0]}, SamplingOptions(o).set_max_new_tokens(3))[0];
  EXPECT_EQ(short_run.token_ids,
            std::vector<int32_t>(free_run.token_ids.begin(), free_run.token_ids.begin() + 3));
}

TEST(Sampler, RejectsBadInput) {
  auto m = TinyModel();
  auto code = [&](const std::vector<std::vector<int32_t>>& p, const SamplingOptions& o) {
    return Generate(*m, p, o).status().code();
  };
  EXPECT_EQ(code({{}}, SamplingOptions()), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{1, 512}}, SamplingOptions()), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{1}}, SamplingOptions().set_stop_strings({"x"})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{1}}, SamplingOptions().set_top_p(0)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{1}}, SamplingOptions().set_temperature(-1)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{1}}, SamplingOptions().set_num_samples_per_prompt(0)),
            StatusCode::kInvalidArgument);
  auto none = Generate(*m, {{1}}, SamplingOptions().set_max_new_tokens(0));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE((*none)[0].token_ids.empty());
}

}  // namespace
}  // namespace egca::trainer
