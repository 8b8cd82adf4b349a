#include "egca/core/mix.h"

#include <gtest/gtest.h>

namespace egca {
namespace {

// The published SplitMix64 test vector: a generator seeded with 1234567 outputs
// 6457827717110365317, 3203168211198807973 (Vigna's splitmix64.c: next() mixes the state
// after adding the golden gamma; SplitMix64() adds the gamma itself).
TEST(SplitMix64, MatchesThePublishedSequence) {
  EXPECT_EQ(SplitMix64(1234567), 6457827717110365317ULL);
  EXPECT_EQ(SplitMix64(1234567 + 0x9E3779B97F4A7C15ULL), 3203168211198807973ULL);
  EXPECT_EQ(SplitMix64(0), 0xE220A8397B1DCDAFULL);
  static_assert(SplitMix64(0) == 0xE220A8397B1DCDAFULL, "usable at compile time");
}

}  // namespace
}  // namespace egca
