// Expect TIMEOUT: sleeps past the wall-clock limit without using CPU.
#include <unistd.h>
int main() {
  while (true) sleep(100);
}
