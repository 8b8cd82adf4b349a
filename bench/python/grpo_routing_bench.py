#!/usr/bin/env python3
"""Per-step routing time of examples/python/grpo_loop.py against egca-batch, same samples.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/grpo_routing_bench.py \
        [--steps 10] [--prompts 8] [--group 8] [--workers 2] [--seed 0]

The loop's 30 problems (6 assert tests each) and, per step, its batch: `prompts` problems x
`group` programs, each line picked uniformly from the loop's choices (what the untrained
policy samples: mostly LOGIC). Every step's batch is routed three ways, in turn, so that
load on a shared machine hits all alike:
  egca-batch         `egca-batch run` on the step's samples written as an egca sample JSONL:
                     RunBatch's own wall time (printed by egca-batch; it starts its servers)
                     and the whole process
  route_batch        egca.route_batch as the loop calls it (the persistent RoutePool)
  route_samples      the per-call path without a pool (servers started every call, as
                     route_batch did before the pool)
Prints the medians per step and the ratio route_batch / egca-batch RunBatch (target: <= 1.10).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "python"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import egca  # noqa: E402
from egca import _egca  # noqa: E402
from codet_subset import EGCA_BATCH  # noqa: E402
from grpo_loop import KS, OPS, assemble, line_choices, make_problems  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    table = [(op, k) for op in OPS for k in KS]
    batch_run, batch_proc, pooled, per_call = [], [], [], []
    modes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="egca-grpo-bench-") as tmp:
        problems_path = make_problems(tmp, args.seed)
        problems = egca.load_problems(problems_path, format="mbpp")
        pool = egca.RoutePool(workers=args.workers)
        # The pool's servers start on its first call, as in the loop (its first greedy
        # evaluation); not counted in any step.
        pool.route_batch(problems, ["mbpp/1"], [assemble(">", 0, [0] * 6)[0]],
                         completion_is_body=False)
        for step in range(args.steps):
            chosen = rng.sample(range(len(table)), args.prompts)
            ids, programs = [], []
            for i in chosen:
                op, k = table[i]
                choices = line_choices(op, k)
                for _ in range(args.group):
                    picks = [rng.randrange(len(c)) for c in choices]
                    ids.append(f"mbpp/{i + 1}")
                    programs.append(assemble(op, k, picks)[0])
            samples_path = os.path.join(tmp, f"step{step}.jsonl")
            with open(samples_path, "w") as f:
                for pid, program in zip(ids, programs):
                    f.write(json.dumps({"problem_id": pid, "completion": program,
                                        "completion_is_body": False}) + "\n")
            t0 = time.perf_counter()
            done = subprocess.run([str(EGCA_BATCH), "run", "--problems", problems_path,
                                   "--format", "mbpp", "--samples", samples_path, "--store",
                                   os.path.join(tmp, f"store{step}"), "--workers",
                                   str(args.workers), "--progress", "off"],
                                  capture_output=True, text=True)
            batch_proc.append(time.perf_counter() - t0)
            m = re.search(r"programs routed\) in ([0-9.]+) s", done.stderr)
            if done.returncode != 0 or not m:
                print(done.stderr, file=sys.stderr)
                return 2
            batch_run.append(float(m.group(1)))
            t0 = time.perf_counter()
            routes = pool.route_batch(problems, ids, programs, completion_is_body=False)
            pooled.append(time.perf_counter() - t0)
            samples = [egca.Sample(pid, p, False) for pid, p in zip(ids, programs)]
            t0 = time.perf_counter()
            fresh = _egca.route_samples(problems, samples, workers=args.workers)
            per_call.append(time.perf_counter() - t0)
            assert [r.mode for r in routes] == [r.mode for r in fresh]
            for r in routes:
                modes[r.mode] = modes.get(r.mode, 0) + 1
            print(f"step {step + 1}: egca-batch RunBatch {batch_run[-1]:.2f} s (process "
                  f"{batch_proc[-1]:.2f} s); route_batch (pool) {pooled[-1]:.2f} s; "
                  f"route_samples (no pool) {per_call[-1]:.2f} s", flush=True)
        pool.close()
    med = statistics.median
    n = args.prompts * args.group
    print(f"\n{args.steps} steps x {n} programs (modes {modes}), {args.workers} workers, "
          f"medians; 1-min load at the end {os.getloadavg()[0]:.1f}\n")
    print("| routing one step | seconds | programs/s |")
    print("|---|---|---|")
    for name, xs in (("egca-batch: RunBatch", batch_run), ("egca-batch: whole process", batch_proc),
                     ("egca.route_batch (persistent pool)", pooled),
                     ("route_samples, servers per call (before)", per_call)):
        print(f"| {name} | {med(xs):.3f} | {n / med(xs):.1f} |")
    ratio = med(pooled) / med(batch_run)
    print(f"\nratio route_batch / egca-batch RunBatch: {ratio:.3f} ({(ratio - 1) * 100:+.1f}%); "
          f"servers per call / pool: {med(per_call) / med(pooled):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
