// Expect VIOLATION (execve): running another program is forbidden.
#include <unistd.h>
int main() {
  execl("/bin/sh", "sh", "-c", "echo pwned > /tmp/egca_hostile_cpp_exec", (char*)nullptr);
  return 0;
}
