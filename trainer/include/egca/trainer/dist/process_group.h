// dist::ProcessGroupDistribution: data parallelism over torch.distributed's c10d — a
// TCPStore for rendezvous (rank 0 serves it at MASTER_ADDR:MASTER_PORT) and a process group
// for the collectives: Gloo on CPU, NCCL on CUDA (compiled only against a CUDA LibTorch,
// EGCA_HAVE_NCCL). No communication code of egca's own: every byte moves through c10d.
//
// Launch: torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; Slurm's srun
// sets SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (the master is MASTER_ADDR, else the flag
// --master-addr, else the first host of SLURM_JOB_NODELIST; the port MASTER_PORT, else the
// flag, else 29500). ReadLaunchEnvironment reads them; a process with none of them (or a
// world size of 1) is a single process and runs dist::SingleProcess.
//
// Gradients: the parameters are laid out once in buckets (reverse parameter order, the
// order backward produces them; at most bucket_bytes each, one dtype per bucket). Before
// the backward of a pass's last micro-batch, BeforeLastBackward hooks every parameter; a
// hook copies the parameter's full gradient (what earlier micro-batches accumulated plus
// this backward's) into its bucket, and a bucket whose parameters are all in is all-reduced
// asynchronously while backward goes on. Buckets are launched strictly in bucket order on
// every rank (collectives must match across ranks); AllReduceGradients copies what no hook
// saw, launches the rest, waits and writes the sums back into the gradients.
//
// Faults: every collective has `timeout` (a rank stuck outside collectives is found by the
// others when their next collective times out); a watchdog thread beats a heartbeat into the
// store every heartbeat_seconds and watches every other rank's; a peer silent for
// heartbeat_timeout (killed, stopped), an abort reason posted by a failing peer, or a lost
// store (rank 0 gone) ends this process at once with one line on stderr, exit status 1.
// Barrier (checkpoints, the writer's evaluation) waits without a time limit: the heartbeat
// is what ends it when a rank dies.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "egca/core/status.h"
#include "egca/trainer/dist/distribution.h"

namespace egca::trainer::dist {

// Where this process sits in a launch, read from the environment.
struct LaunchEnvironment {
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t local_rank = 0;
  std::string master_addr;  // the rendezvous host (rank 0's)
  int port = 29500;
  std::string launcher;  // "torchrun", "slurm" or "" (a single process)
};

// Reads torchrun's or Slurm's variables through `getenv` (torchrun's win when both are
// set). `master_addr_flag` / `master_port_flag` (empty / 0: unset) come from the command
// line. An error names the variable and its bad value.
StatusOr<LaunchEnvironment> ReadLaunchEnvironment(
    const std::function<const char*(const char*)>& getenv, const std::string& master_addr_flag = "",
    int master_port_flag = 0);

// The first host of a Slurm node list: "gpu[003-010,012],cpu1" -> "gpu003".
StatusOr<std::string> FirstSlurmHost(const std::string& nodelist);

struct ConnectOptions {
  std::string backend = "auto";  // auto (nccl on CUDA, gloo on CPU), gloo or nccl
  bool cuda = false;             // the training device is CUDA (auto picks nccl)
  int64_t cuda_device = 0;       // nccl: this rank's device index
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};  // every collective
  double heartbeat_seconds = 1.0;
  double heartbeat_timeout = 60.0;  // a peer silent this long is dead
  int64_t bucket_bytes = 25 << 20;  // gradient bucket cap
  // A world of 1 still builds the store and the process group (benchmarks of a backend on
  // one device); otherwise it runs SingleProcess.
  bool group_for_one_rank = false;
  // Called on rank 0 once its store listens (with the port: tests pass port 0 and learn
  // the one the kernel chose).
  std::function<void(int)> on_listening;
};

// Joins the job described by `env` (rank 0 serves the store): blocks until every rank has
// arrived or options.timeout passes, then starts the watchdog. Errors name the host, port
// and backend.
StatusOr<std::shared_ptr<Distribution>> ConnectProcessGroup(const LaunchEnvironment& env,
                                                            const ConnectOptions& options);

// The last steps of a multi-process run that ended well: stops the watchdog, then waits for
// every rank (so that rank 0's store outlives the others' last use of it). A no-op for
// SingleProcess.
Status FinishDistribution(Distribution& d);

}  // namespace egca::trainer::dist
