#!/usr/bin/env python3
"""Throughput of egca.route_batch from Python against egca-batch, same samples, same workers.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/route_batch_bench.py \
        [--samples 500] [--workers 2] [--repeats 3]

Both run the same code (egca::batch::RunBatch) on the same CodeT samples
(bench/python/codet_subset.py); runs alternate (egca-batch, Python, egca-batch, ...) so that
load on a shared machine hits both alike. Times:
  egca-batch RunBatch   the wall time egca-batch reports for its run (RunStats::wall_seconds)
  egca-batch process    the whole process: start, loading problems and samples, the run, exit
  route_batch           the Python call: samples in, Route objects out (GIL released inside)
Prints a table of the medians and the ratio route_batch / egca-batch RunBatch.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import egca  # noqa: E402
from codet_subset import EGCA_BATCH, HUMANEVAL, write_subset  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    batch_run, batch_proc, python = [], [], []
    with tempfile.TemporaryDirectory(prefix="egca-bench-") as tmp:
        subset = os.path.join(tmp, "codet.jsonl")
        problems, samples = write_subset(subset, args.samples)
        for rep in range(args.repeats):
            store = os.path.join(tmp, f"store{rep}")
            t0 = time.perf_counter()
            done = subprocess.run([str(EGCA_BATCH), "run", "--problems", str(HUMANEVAL),
                                   "--samples", subset, "--store", store, "--workers",
                                   str(args.workers), "--progress", "off"],
                                  check=True, capture_output=True, text=True)
            batch_proc.append(time.perf_counter() - t0)
            m = re.search(r"programs routed\) in ([0-9.]+) s", done.stderr)
            if not m:
                print(done.stderr, file=sys.stderr)
                return 2
            batch_run.append(float(m.group(1)))
            t0 = time.perf_counter()
            routes = egca.route_batch(problems, samples=samples, workers=args.workers)
            python.append(time.perf_counter() - t0)
            assert len(routes) == args.samples
            print(f"repeat {rep + 1}: egca-batch RunBatch {batch_run[-1]:.2f} s, process "
                  f"{batch_proc[-1]:.2f} s; route_batch {python[-1]:.2f} s", flush=True)
    med = statistics.median
    load = os.getloadavg()[0]
    print(f"\n{args.samples} CodeT samples, {args.workers} workers, median of {args.repeats} "
          f"(1-min load at the end {load:.1f})\n")
    print("| run | seconds | samples/s |")
    print("|---|---|---|")
    for name, xs in (("egca-batch: RunBatch", batch_run), ("egca-batch: whole process", batch_proc),
                     ("egca.route_batch (Python)", python)):
        print(f"| {name} | {med(xs):.2f} | {args.samples / med(xs):.1f} |")
    ratio = med(python) / med(batch_run)
    print(f"\nratio route_batch / egca-batch RunBatch: {ratio:.3f} "
          f"({(ratio - 1) * 100:+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
