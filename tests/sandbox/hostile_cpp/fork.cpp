// Expect VIOLATION: fork() is a clone without CLONE_THREAD, forbidden by the seccomp filter.
#include <unistd.h>
int main() {
  pid_t p = fork();
  return p < 0 ? 3 : 0;
}
