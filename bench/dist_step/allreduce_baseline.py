#!/usr/bin/python3
"""Baseline for dist_allreduce: torch.distributed's all_reduce of the same number of gradient
bytes as one flat tensor, same backend and devices (the floor egca's bucketed path is
measured against). Launch it like dist_allreduce:

  python3 -m torch.distributed.run --nproc_per_node R bench/dist_step/allreduce_baseline.py \
      --bytes N [--dtype bfloat16|float32] [--device cuda|cpu] [--backend nccl|gloo] [--iters 10]

Alone (no launcher) it joins a world of one on a free port. Rank 0 prints one JSON object:
median seconds of --iters all-reduces after 2 warm-ups, algorithm and bus bandwidth (GB/s).
"""
import argparse
import json
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--backend", default="nccl")
    ap.add_argument("--iters", type=int, default=10)
    a = ap.parse_args()
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(port))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    dev = torch.device(f"cuda:{local}") if a.device == "cuda" else torch.device("cpu")
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    dist.init_process_group(a.backend, rank=rank, world_size=world)
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[a.dtype]
    n = a.bytes // torch.empty((), dtype=dtype).element_size()
    t = torch.ones(n, dtype=dtype, device=dev)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    times = []
    for i in range(a.iters + 2):
        sync()
        t0 = time.perf_counter()
        dist.all_reduce(t)
        sync()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    med = torch.tensor([statistics.median(times)], dtype=torch.float64, device=dev)
    dist.all_reduce(med, op=dist.ReduceOp.MAX)
    if rank == 0:
        s = med.item()
        algbw = n * t.element_size() / s / 1e9
        print(json.dumps({"world_size": world, "backend": a.backend, "bytes": n * t.element_size(),
                          "allreduce_s": s, "algbw_gbps": algbw,
                          "busbw_gbps": algbw * 2 * (world - 1) / world, "torch": torch.__version__}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
