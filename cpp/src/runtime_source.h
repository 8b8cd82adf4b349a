// The runtime linked into every compiled C++ program (compiled once per cache, then
// linked): records where the last C++ exception was thrown, so that an exception escaping
// `main` can be told apart as the test's own failure (thrown in `main`) or the
// candidate's exception (thrown elsewhere). The .so is linked -Bsymbolic, so its own
// `throw` expressions bind to this __cxa_throw, which forwards to libstdc++'s.
#pragma once

namespace egca::cpp::internal {

inline constexpr const char kRuntimeSource[] = R"egca(
#include <dlfcn.h>
#include <typeinfo>

extern "C" {
__attribute__((visibility("default"))) void* egca_last_throw_pc = nullptr;

[[noreturn]] __attribute__((visibility("default"))) void __cxa_throw(
    void* object, std::type_info* type, void (*destructor)(void*)) {
  egca_last_throw_pc = __builtin_return_address(0);
  using Throw = void (*)(void*, std::type_info*, void (*)(void*));
  static Throw real = reinterpret_cast<Throw>(dlsym(RTLD_NEXT, "__cxa_throw"));
  real(object, type, destructor);
  __builtin_unreachable();
}
}
)egca";

}  // namespace egca::cpp::internal
