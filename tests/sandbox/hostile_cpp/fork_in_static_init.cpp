// Expect VIOLATION: a global's constructor runs when the program is loaded, which happens
// after isolation: the fork is still stopped.
#include <unistd.h>
struct Evil {
  Evil() { fork(); }
};
Evil evil;
int main() { return 0; }
