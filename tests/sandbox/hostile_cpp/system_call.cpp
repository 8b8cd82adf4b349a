// Expect VIOLATION: system() forks (posix_spawn blocks every signal around its clone; the
// notification listener still names the call).
#include <cstdlib>
int main() { return std::system("touch /tmp/egca_hostile_cpp_system"); }
