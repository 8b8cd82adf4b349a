// Expect KILLED: writes a completion record of its own to the result channel and exits
// before the test's main could fail; the record lacks the run's nonce, so it never passes.
#include <unistd.h>
#include <cstring>
int add(int a, int b) {
  const char* fake = "egca-cpp 00000000000000000000000000000000\nexit 0\n";
  write(3, fake, strlen(fake));
  _exit(0);
}
