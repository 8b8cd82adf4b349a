// sandbox_overhead: what one sandboxed run costs.
//
//   BM_BareForkExit          baseline: fork + _exit + waitpid from this process, no sandbox
//   BM_Run/<config>          ForkServer::Run of an empty child_main
//   BM_RunTouch50MB/<config> child_main allocates and touches 50 MB (page faults, RSS)
//   BM_RunWarmHeap50MB       the server holds a 50 MB warm heap (like a warm interpreter
//                            with preloaded modules): fork copies its page tables
// seccomp:1 is the full configuration (every protection this machine allows; the label
// lists them); seccomp:0 shows the filter's share. items_per_second = runs/s.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "egca/sandbox/fork_server.h"

namespace {

using egca::sandbox::ChildRequest;
using egca::sandbox::ForkServer;
using egca::sandbox::ForkServerOptions;

int EmptyChild(std::string_view, int) { return 0; }

int Touch50MB(std::string_view, int) {
  constexpr size_t kBytes = 50u << 20;
  auto* p = static_cast<char*>(std::malloc(kBytes));
  if (p == nullptr) return 1;
  std::memset(p, 1, kBytes);
  return p[kBytes - 1] == 1 ? 0 : 2;
}

char* g_warm_heap = nullptr;

std::unique_ptr<ForkServer> MakeServer(egca::sandbox::ChildMain child, bool seccomp,
                                       std::function<void()> warm_up = {},
                                       bool namespaces_and_landlock = true) {
  ForkServerOptions options;
  options.child_main = std::move(child);
  options.install_seccomp = seccomp;
  options.use_namespaces = namespaces_and_landlock;
  options.use_landlock = namespaces_and_landlock;
  // Per user: the default root may belong to another user on a shared machine.
  options.scratch_root = "/tmp/egca-sandbox-bench-" + std::to_string(geteuid());
  options.warm_up = std::move(warm_up);
  auto server = ForkServer::Start(std::move(options));
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(server).value();
}

void RunLoop(benchmark::State& state, ForkServer& server) {
  ChildRequest request;
  request.limits.wall_seconds = 10;
  for (auto _ : state) {
    auto outcome = server.Run(request);
    if (!outcome.ok() || outcome->termination != egca::sandbox::Termination::kExited ||
        outcome->exit_code != 0) {
      state.SkipWithError("run failed");
      break;
    }
    benchmark::DoNotOptimize(outcome->wall_seconds);
  }
  state.SetItemsProcessed(state.iterations());
  egca::sandbox::Capabilities caps = server.capabilities();
  state.SetLabel(std::string(caps.seccomp ? "seccomp " : "") +
                 (caps.landlock_abi > 0 ? "landlock " : "") +
                 (caps.network_namespace ? "netns " : "") + (caps.mount_namespace ? "mntns " : "") +
                 (caps.uid_drop ? "uid-drop" : ""));
}

void BM_BareForkExit(benchmark::State& state) {
  for (auto _ : state) {
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    waitpid(pid, nullptr, 0);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BareForkExit)->UseRealTime();

void BM_Run(benchmark::State& state) {
  auto server = MakeServer(EmptyChild, state.range(0) != 0);
  RunLoop(state, *server);
}
BENCHMARK(BM_Run)->ArgName("seccomp")->Arg(1)->Arg(0)->UseRealTime();

// Violations reported by a SIGSYS handler instead of the notification listener.
void BM_RunSigsysReporting(benchmark::State& state) {
  ForkServerOptions options;
  options.child_main = EmptyChild;
  options.seccomp_notify = false;
  options.scratch_root = "/tmp/egca-sandbox-bench-" + std::to_string(geteuid());
  auto server = ForkServer::Start(std::move(options));
  if (!server.ok()) {
    state.SkipWithError(server.status().ToString().c_str());
    return;
  }
  RunLoop(state, *server.value());
}
BENCHMARK(BM_RunSigsysReporting)->UseRealTime();

// Seccomp and rlimits only (the weakest configuration): the cost of the other layers.
void BM_RunSeccompOnly(benchmark::State& state) {
  auto server = MakeServer(EmptyChild, true, {}, /*namespaces_and_landlock=*/false);
  RunLoop(state, *server);
}
BENCHMARK(BM_RunSeccompOnly)->UseRealTime();

void BM_RunTouch50MB(benchmark::State& state) {
  auto server = MakeServer(Touch50MB, state.range(0) != 0);
  RunLoop(state, *server);
}
BENCHMARK(BM_RunTouch50MB)->ArgName("seccomp")->Arg(1)->UseRealTime();

void BM_RunWarmHeap50MB(benchmark::State& state) {
  auto server = MakeServer(EmptyChild, true, [] {
    constexpr size_t kBytes = 50u << 20;
    g_warm_heap = static_cast<char*>(std::malloc(kBytes));
    std::memset(g_warm_heap, 1, kBytes);
  });
  RunLoop(state, *server);
}
BENCHMARK(BM_RunWarmHeap50MB)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
