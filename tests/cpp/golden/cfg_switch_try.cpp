#include <map>
#include <stdexcept>
#include <vector>
int classify(const std::vector<int>& xs) {
  std::map<int, int> seen;
  int total = 0;
  for (int x : xs) {
    switch (x % 3) {
      case 0:
        total += x;
        break;
      case 1:
        continue;
      default:
        seen[x] = 1;
    }
  }
  int i = 0;
  do {
    ++i;
  } while (i < 3 && total > 0);
  try {
    if (total < 0) throw std::runtime_error("neg");
  } catch (const std::exception& e) {
    total = 0;
  }
  return total > 10 ? 1 : 0;
}
