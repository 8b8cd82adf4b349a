// Expect RUNTIME_ERROR (SIGSEGV): unbounded recursion overflows the stack.
int depth(int n) {
  volatile char pad[1024];
  pad[0] = static_cast<char>(n);
  return depth(n + 1) + pad[0];
}
int main() { return depth(0); }
