// Dynamic sampling (issue 23): the refill order, the refill rounds and the cap, with a fake
// sampler whose groups' reward spread is known per problem.
#include "egca/trainer/rl/dynamic_sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace egca::trainer {
namespace {

// A sampler that records what it was asked for; problems in `flat` have all rewards equal.
struct FakeSampler {
  std::set<size_t> flat;
  std::vector<std::vector<size_t>> calls;
  SampleGroupsFn fn() {
    return [this](const std::vector<size_t>& problems) -> StatusOr<std::vector<bool>> {
      calls.push_back(problems);
      std::vector<bool> spread;
      for (size_t p : problems) spread.push_back(flat.count(p) == 0);
      return spread;
    };
  }
};

TEST(DynamicSampling, RefillOrderSkipsTheStepsPromptsAndIsDeterministic) {
  const std::vector<size_t> step = {3, 7, 3};
  const auto a = RefillOrder(10, step, 42, 5);
  EXPECT_EQ(a, RefillOrder(10, step, 42, 5));
  ASSERT_EQ(a.size(), 8u);
  std::vector<size_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<size_t>{0, 1, 2, 4, 5, 6, 8, 9}));
  // Another step or seed shuffles differently (8! orders: a collision would be a bug).
  EXPECT_NE(a, RefillOrder(10, step, 42, 6));
  EXPECT_NE(a, RefillOrder(10, step, 43, 5));
}

// Batch of 4: problems 1 and 3 are flat. Round 0 samples {0, 1, 2, 3} and keeps 0, 2 (positions
// 0, 2); round 1 asks for exactly the 2 missing: refill {10, 11}, 11 flat, keeps 10 (position
// 4); round 2 asks for 1: {12}, kept (position 6). Extra prompts 3, rounds 2, skipped 3.
TEST(DynamicSampling, RefillsExactlyTheMissingGroups) {
  FakeSampler s;
  s.flat = {1, 3, 11};
  DynamicSamplingStats st;
  auto kept = FillBatch({0, 1, 2, 3}, {10, 11, 12, 13, 14}, 16, s.fn(), &st);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, (std::vector<size_t>{0, 2, 4, 6}));
  ASSERT_EQ(s.calls.size(), 3u);
  EXPECT_EQ(s.calls[1], (std::vector<size_t>{10, 11}));
  EXPECT_EQ(s.calls[2], (std::vector<size_t>{12}));
  EXPECT_EQ(st.sampled_groups, 7);
  EXPECT_EQ(st.skipped_groups, 3);
  EXPECT_EQ(st.extra_prompts, 3);
  EXPECT_EQ(st.refill_rounds, 2);
  EXPECT_EQ(st.kept_groups, 4);
  EXPECT_FALSE(st.cap_reached);
}

// The cap: 2 extra prompts at most. Round 1 asks for min(3 missing, cap 2) = {10, 11}, both
// flat; no cap left, so the batch ends with 1 group and says so.
TEST(DynamicSampling, CapStopsRefillingAndTheBatchStaysShort) {
  FakeSampler s;
  s.flat = {1, 2, 3, 10, 11};
  DynamicSamplingStats st;
  auto kept = FillBatch({0, 1, 2, 3}, {10, 11, 12, 13}, 2, s.fn(), &st);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, (std::vector<size_t>{0}));
  ASSERT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.calls[1], (std::vector<size_t>{10, 11}));
  EXPECT_EQ(st.extra_prompts, 2);
  EXPECT_EQ(st.skipped_groups, 5);
  EXPECT_EQ(st.kept_groups, 1);
  EXPECT_TRUE(st.cap_reached);
  // Cap 0: drop without refilling.
  FakeSampler z;
  z.flat = {1};
  DynamicSamplingStats zs;
  auto k0 = FillBatch({0, 1}, {5, 6}, 0, z.fn(), &zs);
  ASSERT_TRUE(k0.ok());
  EXPECT_EQ(*k0, (std::vector<size_t>{0}));
  EXPECT_EQ(z.calls.size(), 1u);
  EXPECT_TRUE(zs.cap_reached);
  // The refill order running out ends it as well (everything flat: an empty batch).
  FakeSampler f;
  f.flat = {0, 1, 5};
  DynamicSamplingStats fs;
  auto kf = FillBatch({0, 1}, {5}, 10, f.fn(), &fs);
  ASSERT_TRUE(kf.ok());
  EXPECT_TRUE(kf->empty());
  EXPECT_EQ(fs.extra_prompts, 1);
  EXPECT_TRUE(fs.cap_reached);
}

// Nothing flat: one round, no refill.
TEST(DynamicSampling, FullBatchNeedsNoRefill) {
  FakeSampler s;
  DynamicSamplingStats st;
  auto kept = FillBatch({4, 5, 6}, {1, 2}, 8, s.fn(), &st);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(st.extra_prompts, 0);
  EXPECT_EQ(st.refill_rounds, 0);
}

// A sampler error stops it and is returned.
TEST(DynamicSampling, SamplerErrorIsReturned) {
  DynamicSamplingStats st;
  auto kept = FillBatch(
      {0}, {1}, 4,
      [](const std::vector<size_t>&) -> StatusOr<std::vector<bool>> {
        return InvalidArgument("boom");
      },
      &st);
  EXPECT_FALSE(kept.ok());
}

}  // namespace
}  // namespace egca::trainer
