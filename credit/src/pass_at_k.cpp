#include "egca/credit/pass_at_k.h"

namespace egca::credit {

std::optional<double> PassAtK(int64_t n, int64_t c, int64_t k) {
  if (n < 1 || k < 1 || c < 0 || c > n || k > n) return std::nullopt;
  if (n - c < k) return 1.0;  // every k-subset holds a passing sample
  double fail = 1.0;          // C(n - c, k) / C(n, k)
  for (int64_t i = n - c + 1; i <= n; ++i) fail *= 1.0 - static_cast<double>(k) / static_cast<double>(i);
  return 1.0 - fail;
}

std::optional<double> MeanPassAtK(const std::vector<std::pair<int64_t, int64_t>>& n_c, int64_t k) {
  if (n_c.empty()) return std::nullopt;
  double sum = 0;
  for (const auto& [n, c] : n_c) {
    const auto p = PassAtK(n, c, k);
    if (!p) return std::nullopt;
    sum += *p;
  }
  return sum / static_cast<double>(n_c.size());
}

}  // namespace egca::credit
