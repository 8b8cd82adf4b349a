// egca-cpp-server's __cxa_throw: exported from the server program (the first object in the
// process's global symbol scope), so libstdc++'s own calls to __cxa_throw (an exception
// thrown inside its compiled code, e.g. std::string::substr's out_of_range) bind here.
// It records the candidate's frames on the stack (child.h: RecordLibraryThrow) and forwards
// to libstdc++'s. Only this program defines it: tools that link egca::cpp and fork their
// own server (tracer::ServerStart::kFork) keep libstdc++'s, and such throws stay without a
// line there. <cxxabi.h> is not included: its declaration carries an exception
// specification this definition does not need.
#include <dlfcn.h>

#include <typeinfo>

#include "child.h"

extern "C" [[noreturn]] __attribute__((visibility("default"))) void __cxa_throw(
    void* object, std::type_info* type, void (*destructor)(void*)) {
  egca::cpp::internal::RecordLibraryThrow();
  using Throw = void (*)(void*, std::type_info*, void (*)(void*));
  static const Throw real = reinterpret_cast<Throw>(dlsym(RTLD_NEXT, "__cxa_throw"));
  real(object, type, destructor);
  __builtin_unreachable();
}
