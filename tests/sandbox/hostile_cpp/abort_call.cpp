// Expect RUNTIME_ERROR (SIGABRT).
#include <cstdlib>
int main() { std::abort(); }
