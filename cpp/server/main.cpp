// egca-cpp-server: CppExecutor's fork server as its own program (tracer::ServerStart::kExec).
// CppExecutor starts it with posix_spawn; it forks one sandboxed child per test
// (sandbox::ServeMain), which loads the compiled candidate and calls its main
// (cpp/src/child.h). It holds nothing of the process that uses the executor (expected
// outputs, other programs), so a candidate reading its own memory finds none of it. There
// is nothing to warm up. Not a command: started from a shell it says so and exits with
// status 2.
#include <string_view>
#include <utility>

#include "child.h"
#include "egca/sandbox/fork_server.h"

int main(int argc, char** argv) {
  egca::sandbox::ServeHooks hooks;
  hooks.child_main = [](std::string_view payload, int result_fd) {
    return egca::cpp::internal::RunProgramChild(payload, result_fd);
  };
  return egca::sandbox::ServeMain(argc, argv, std::move(hooks));
}
