// Hostile C++ program for tests/cpp/executor_caller_memory_e2e_test.cpp (not in
// expected.json: its answer exists only in the test process).
// Why: its test expects a random-looking string ("EGCA-HOSTILE-ANSWER:" and 32 hex digits)
// that only the calling process holds in its heap. The program reads every readable
// region /proc/self/maps lists and prints the first such string it finds. A fork server
// forked from the caller holds it (the control passes); egca-cpp-server, the C++
// executor's own server program, holds nothing of the caller's. To show the scan works,
// it first finds a marker of the same shape it put in its own heap ("scan broken" if not).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

static bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// The first `prefix` followed by 32 lowercase hex digits in this process's readable memory.
static std::string Scan(const std::string& prefix) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return "";
  char line[512];
  std::string hit;
  while (hit.empty() && std::fgets(line, sizeof(line), maps) != nullptr) {
    unsigned long start = 0, end = 0;
    char perms[8] = {0};
    if (std::sscanf(line, "%lx-%lx %7s", &start, &end, perms) != 3 || perms[0] != 'r') continue;
    if (std::strstr(line, "[v") != nullptr) continue;  // [vvar], [vsyscall], [vdso]
    const char* data = reinterpret_cast<const char*>(start);
    const size_t size = end - start;
    const size_t need = prefix.size() + 32;
    for (size_t at = 0; hit.empty() && at + need <= size;) {
      const void* found = memmem(data + at, size - at, prefix.data(), prefix.size());
      if (found == nullptr) break;
      const size_t pos = static_cast<size_t>(static_cast<const char*>(found) - data);
      if (pos + need > size) break;
      bool hex = true;
      for (size_t i = 0; i < 32 && hex; ++i) hex = IsHex(data[pos + prefix.size() + i]);
      if (hex) hit.assign(data + pos, need);
      at = pos + 1;
    }
  }
  std::fclose(maps);
  return hit;
}

int main() {
  // Built at run time so neither string lies in the program's own data with 32 hex
  // digits after it.
  const std::string self_prefix = std::string("EGCA-SELF") + "-MARK:";
  std::string* marker = new std::string(self_prefix);
  for (int i = 0; i < 32; ++i) marker->push_back("0123456789abcdef"[(i * 7) % 16]);
  if (Scan(self_prefix) != *marker) {
    std::printf("scan broken\n");
    return 0;
  }
  const std::string hit = Scan(std::string("EGCA-HOSTILE") + "-ANSWER:");
  std::printf("%s\n", hit.empty() ? "not found" : hit.c_str());
  delete marker;
  return 0;
}
