// Expect OUTPUT_LIMIT: prints without end.
#include <cstdio>
int main() {
  while (true) std::fputs("flood flood flood flood flood flood flood flood\n", stdout);
}
