// Small statistics shared by the benchmarks. Header-only, no dependencies.
#pragma once

#include <algorithm>
#include <vector>

namespace egca::bench {

// The median (the mean of the two middle values for an even count); 0 for no values.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace egca::bench
