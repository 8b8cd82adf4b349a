#include <cassert>
int main() {
  assert(sum_to(3) == 6);
  assert(sum_to(0) == 0);
}
