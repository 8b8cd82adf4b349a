// Expect OK: writes outside the private directory fail (Landlock / read-only mounts); the
// program reports and exits normally. The test also checks the host files stay absent.
#include <cstdio>
#include <cstdlib>
int main() {
  const char* paths[] = {"/tmp/egca_hostile_cpp_file", "/var/tmp/egca_hostile_cpp_file",
                         "/root/egca_hostile_cpp_file", "/etc/egca_hostile_cpp_file"};
  int written = 0;
  for (const char* p : paths) {
    if (FILE* f = std::fopen(p, "w")) {
      std::fputs("pwned", f);
      std::fclose(f);
      ++written;
    }
  }
  // Its own directory is writable.
  FILE* own = std::fopen("scratch.txt", "w");
  std::printf("own=%d\n", own != nullptr);
  return 0;
}
