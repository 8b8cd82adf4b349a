// Expect VIOLATION: blocks every signal first; the seccomp listener still stops the fork.
#include <csignal>
#include <unistd.h>
int main() {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, nullptr);
  fork();
  return 0;
}
