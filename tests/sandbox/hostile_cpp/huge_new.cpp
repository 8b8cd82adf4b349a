// Expect MEMORY_LIMIT: one 64 GiB allocation.
#include <cstddef>
#include <cstdio>
int main() {
  char* p = new char[size_t(64) << 30];
  p[0] = 1;
  std::printf("%d\n", p[0]);
}
