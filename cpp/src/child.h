// The sandboxed child's side of a C++ run (runs after isolation, in the fork server's child).
#pragma once

#include <string_view>

namespace egca::cpp::internal {

// Payload: "<nonce>\n<shared object bytes>". Writes the program to ./program.so, loads it,
// calls its main and writes the completion record to `result_fd`:
//   "egca-cpp <nonce>\n" then one of
//   "exit <rc>\n"
//   "exception <throw offset hex or -> <thrown in main 0/1>\t<type>\t<what>\n"
//   "setup <message>\n"  (the program could not be loaded: egca's or the program's fault)
// and, from the fault handler, "signal <signo> <offset hex or ->\n" (no nonce: a crash
// record is a hint for the location only, never a pass).
int RunProgramChild(std::string_view payload, int result_fd);

// Records where an exception thrown inside a shared library's compiled code (libstdc++'s
// std::string::substr, std::stoi's helpers, ...) came from: the program's return addresses
// on the stack at the throw, innermost first (the unwinder's walk, which needs no frame
// pointers in the library), so that an exception escaping `main` is blamed on the
// candidate's call as a throw in the program is. Called by egca-cpp-server's __cxa_throw
// (server/library_throw.cpp) before it forwards to libstdc++'s; a no-op until a program is
// loaded. Throws of the program itself bind to its own runtime (-Bsymbolic) and never
// reach it.
void RecordLibraryThrow();

}  // namespace egca::cpp::internal
