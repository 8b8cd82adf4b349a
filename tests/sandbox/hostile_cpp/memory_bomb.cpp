// Expect MEMORY_LIMIT: allocations fail at the address-space limit (std::bad_alloc).
#include <vector>
int main() {
  std::vector<std::vector<char>> hog;
  while (true) hog.emplace_back(64 << 20, 'x');
}
