#include "egca/credit/pass_at_k.h"

#include <gtest/gtest.h>

#include <cmath>

namespace egca::credit {
namespace {

// C(n, k) by lgamma: an independent route to 1 - C(n-c, k) / C(n, k).
double ByBinomials(int64_t n, int64_t c, int64_t k) {
  auto lc = [](int64_t a, int64_t b) { return std::lgamma(a + 1.0) - std::lgamma(b + 1.0) - std::lgamma(a - b + 1.0); };
  if (n - c < k) return 1.0;
  return 1.0 - std::exp(lc(n - c, k) - lc(n, k));
}

TEST(PassAtK, HandValues) {
  EXPECT_NEAR(*PassAtK(5, 2, 1), 0.4, 1e-12);         // c / n
  EXPECT_NEAR(*PassAtK(5, 2, 2), 1 - 3.0 / 10, 1e-12);  // 1 - C(3,2)/C(5,2)
  EXPECT_NEAR(*PassAtK(10, 1, 5), 0.5, 1e-12);        // 1 - C(9,5)/C(10,5) = 1 - 126/252
  EXPECT_DOUBLE_EQ(*PassAtK(3, 0, 1), 0.0);           // c = 0
  EXPECT_DOUBLE_EQ(*PassAtK(4, 3, 2), 1.0);           // n - c < k
  EXPECT_DOUBLE_EQ(*PassAtK(4, 4, 4), 1.0);
  EXPECT_FALSE(PassAtK(3, 1, 5).has_value());         // n < k: no unbiased estimate
  EXPECT_FALSE(PassAtK(3, 4, 1).has_value());         // c > n
}

TEST(PassAtK, AgreesWithBinomials) {
  for (int64_t n : {1, 7, 20, 100, 200}) {
    for (int64_t c = 0; c <= n; c += std::max<int64_t>(1, n / 7)) {
      for (int64_t k : {1, 2, 10, 100}) {
        if (k > n) continue;
        EXPECT_NEAR(*PassAtK(n, c, k), ByBinomials(n, c, k), 1e-9) << n << " " << c << " " << k;
      }
    }
  }
}

TEST(PassAtK, Mean) {
  EXPECT_NEAR(*MeanPassAtK({{5, 2}, {5, 0}}, 1), 0.2, 1e-12);
  EXPECT_FALSE(MeanPassAtK({{5, 2}, {3, 0}}, 5).has_value());
  EXPECT_FALSE(MeanPassAtK({}, 1).has_value());
}

}  // namespace
}  // namespace egca::credit
