// Expect VIOLATION (ptrace).
#include <sys/ptrace.h>
#include <unistd.h>
int main() {
  ptrace(PTRACE_ATTACH, getppid(), nullptr, nullptr);
  return 0;
}
