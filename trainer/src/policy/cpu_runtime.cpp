#include "egca/trainer/policy/cpu_runtime.h"

#include <dlfcn.h>
#include <malloc.h>

#include <ATen/Parallel.h>

#include <climits>
#include <cstdlib>
#include <cstring>

namespace egca::trainer {

bool RetainFreedHostMemory() {
  const char* env = std::getenv("EGCA_KEEP_FREED_MEMORY");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
#if defined(__GLIBC__)
  // No mmap for large blocks: they come from the heap (brk for the main arena; a thread
  // arena that cannot hold one retries in the main arena), and freed heap memory is kept.
  const bool no_mmap = mallopt(M_MMAP_MAX, 0) == 1;
  const bool no_trim = mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
  return no_mmap && no_trim;
#else
  return false;
#endif
}

bool SetComputeThreads(int n) {
  if (n <= 0) return false;
  at::set_num_threads(n);
  using SetThreads = void (*)(int);
  auto fn = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (fn == nullptr) return false;
  fn(n);
  return true;
}

}  // namespace egca::trainer
