// egca-py-server: the executor's fork server as its own program (ServerStart::kExec).
// tracer::Executor starts it with posix_spawn; it embeds CPython, warms it up as the
// forked server did, and forks one sandboxed child per test (sandbox::ServeMain). It
// holds nothing of the process that uses the executor. Not a command: started from a
// shell it says so and exits with status 2.
#include <stdexcept>
#include <string>
#include <string_view>

#include "child_main.h"
#include "egca/sandbox/fork_server.h"
#include "egca/tracer/exec.pb.h"

int main(int argc, char** argv) {
  egca::sandbox::ServeHooks hooks;
  hooks.warm_up = [](std::string_view config_bytes) {
    egca::tracer::proto::ServerConfig config;
    if (!config.ParseFromArray(config_bytes.data(), static_cast<int>(config_bytes.size()))) {
      throw std::runtime_error("egca-py-server: malformed ServerConfig");
    }
    egca::Status status = egca::tracer::WarmUpExecutorServer(config);
    if (!status.ok()) throw std::runtime_error("egca executor: " + status.ToString());
  };
  hooks.child_main = &egca::tracer::ExecutorChildMain;
  return egca::sandbox::ServeMain(argc, argv, std::move(hooks));
}
