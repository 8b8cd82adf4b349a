// Expect VIOLATION (kill): signalling any other process is forbidden.
#include <csignal>
#include <unistd.h>
int main() {
  kill(getppid(), SIGKILL);
  kill(-1, SIGKILL);
  return 0;
}
