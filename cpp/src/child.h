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

}  // namespace egca::cpp::internal
