// Expect MEMORY_LIMIT: allocations fail at the address-space limit (std::bad_alloc).
// Keeps 64 MiB blocks and writes one byte per MiB of each (the block is really committed,
// some of it resident), not every page: the limit is RLIMIT_AS (address space), which the
// bomb reaches after 16 blocks and ~1,000 page faults. Filling every page would take
// 262,144 faults to reach a 1 GiB limit; where a fault costs ~15 us (nested VMs) that is
// ~4 s of CPU, past the test's 2 s CPU limit, and the verdict would depend on which limit a
// slow machine reaches first (TIMEOUT instead of MEMORY_LIMIT).
#include <cstddef>
#include <vector>
char* volatile last_block;  // observable: the allocations cannot be optimized away
int main() {
  std::vector<char*> hog;
  while (true) {
    char* block = new char[std::size_t(64) << 20];
    for (std::size_t at = 0; at < (std::size_t(64) << 20); at += std::size_t(1) << 20) {
      block[at] = 'x';
    }
    hog.push_back(block);
    last_block = block;
  }
}
