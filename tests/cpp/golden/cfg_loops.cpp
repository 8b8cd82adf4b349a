#include <vector>
#include <algorithm>
int fact(int n) {
  if (n <= 1) return 1;
  return n * fact(n - 1);
}
int count_pairs(std::vector<int> v, int k) {
  int c = 0, d = 1;
  std::sort(v.begin(), v.end());
  for (size_t i = 0; i < v.size(); ++i) {
    for (size_t j = i + 1; j < v.size(); ++j) {
      if (v[i] + v[j] == k && d) {
        c++;
      } else if (v[i] > k) {
        break;
      }
    }
  }
  while (c > 100) c -= 1;
  return c;
}
