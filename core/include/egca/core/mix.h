// SplitMix64 (Vigna): a fixed, portable 64-bit mixer. egca derives every seeded choice
// (random-boundary ablation, per-sample sampler streams) from it so the same seed gives the
// same choice on every platform and standard library (std distributions promise no such
// thing).
#pragma once

#include <cstdint>

namespace egca {

constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace egca
