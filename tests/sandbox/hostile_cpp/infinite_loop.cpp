// Expect TIMEOUT: burns CPU forever.
int main() {
  volatile unsigned long x = 0;
  while (true) ++x;
}
