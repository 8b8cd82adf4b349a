// pass@k with the unbiased estimator of Chen et al. 2021 (the HumanEval paper): with n
// samples of a problem of which c pass,
//   pass@k = 1 - C(n - c, k) / C(n, k) = 1 - prod_{i = n - c + 1}^{n} (1 - k / i),
// the product form avoiding the huge binomials. k > n has no unbiased estimate (nullopt).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace egca::credit {

std::optional<double> PassAtK(int64_t n, int64_t c, int64_t k);

// Mean of PassAtK over problems given (n, c) per problem; nullopt when some problem has
// n < k (the estimate would not cover it) or there is no problem.
std::optional<double> MeanPassAtK(const std::vector<std::pair<int64_t, int64_t>>& n_c, int64_t k);

}  // namespace egca::credit
