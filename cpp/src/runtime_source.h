// The runtime linked into every compiled C++ program (compiled once per cache, then
// linked): records where the last C++ exception was thrown, so that an exception escaping
// `main` can be told apart as the test's own failure (thrown in `main`) or the
// candidate's exception (thrown elsewhere), and the statement that threw can be named.
// The .so is linked -Bsymbolic, so its own `throw` expressions bind to this __cxa_throw,
// which forwards to libstdc++'s. It also records up to kThrowFrames return addresses up
// the frame-pointer chain (the program is built -fno-omit-frame-pointer): the parent maps
// the first that lies in the candidate to its line, so a throw inside an instantiated
// standard-library template (vector::at, stoi) is blamed on the candidate's call.
// libstdc++'s out-of-line throw helpers (std::__throw_out_of_range_fmt, ...) are defined
// here with the same messages, so the program's calls to them bind here (-Bsymbolic) and
// their throws are recorded too.
#pragma once

namespace egca::cpp::internal {

inline constexpr const char kRuntimeSource[] = R"egca(
#include <dlfcn.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <typeinfo>

extern "C" {
__attribute__((visibility("default"))) void* egca_last_throw_pc = nullptr;
// Return addresses of the frames above the throw, innermost first, 0-terminated.
__attribute__((visibility("default"))) void* egca_throw_frames[16] = {};

[[noreturn]] __attribute__((visibility("default"))) void __cxa_throw(
    void* object, std::type_info* type, void (*destructor)(void*)) {
  egca_last_throw_pc = __builtin_return_address(0);
  {
    // Only frames of this shared object are followed: its code keeps frame pointers, the
    // code that called `main` need not.
    Dl_info self{}, at{};
    dladdr(reinterpret_cast<void*>(&egca_throw_frames), &self);
    auto* frame = static_cast<uintptr_t*>(__builtin_frame_address(0));
    int n = 0;
    while (n < 15 && frame != nullptr && (reinterpret_cast<uintptr_t>(frame) & 7) == 0) {
      void* ret = reinterpret_cast<void*>(frame[1]);
      if (dladdr(ret, &at) == 0 || at.dli_fbase != self.dli_fbase) break;
      egca_throw_frames[n++] = ret;
      auto* next = reinterpret_cast<uintptr_t*>(frame[0]);
      if (next <= frame) break;
      frame = next;
    }
    egca_throw_frames[n] = nullptr;
  }
  using Throw = void (*)(void*, std::type_info*, void (*)(void*));
  static Throw real = reinterpret_cast<Throw>(dlsym(RTLD_NEXT, "__cxa_throw"));
  real(object, type, destructor);
  __builtin_unreachable();
}
}

namespace std {
void __throw_out_of_range_fmt(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  throw std::out_of_range(buf);
}
void __throw_out_of_range(const char* what) { throw std::out_of_range(what); }
void __throw_length_error(const char* what) { throw std::length_error(what); }
void __throw_invalid_argument(const char* what) { throw std::invalid_argument(what); }
void __throw_logic_error(const char* what) { throw std::logic_error(what); }
}  // namespace std
)egca";

}  // namespace egca::cpp::internal
