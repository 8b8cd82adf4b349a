#!/usr/bin/env python3
"""Per-run cost of routing from a Python caller holding 4 GiB against an empty caller.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/caller_memory.py [--gib 4] [--runs 200]

Each configuration runs in its own fresh interpreter (this script re-executes itself): the
caller first allocates and touches `--gib` GiB (numpy, 0 for the empty caller), then
creates an egca.Router (its executor starts the exec'd server egca-py-server) and routes one
small completion `--runs` times; the per-route time is the median. Configurations alternate
(empty, 4 GiB, empty, ...) `--repeats` times. Prints a table and the ratio.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PROBLEM = {"task_id": 1, "text": "add", "code": "def add(a, b):\n    return a + b\n",
           "test_list": ["assert add(1, 2) == 3"], "test_setup_code": "",
           "challenge_test_list": []}


def child(gib: float, runs: int) -> None:
    import numpy as np

    import egca

    hold = None
    if gib > 0:
        hold = np.ones(int(gib * (1 << 30)) // 8)  # touched: resident
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.jsonl")
        with open(path, "w") as f:
            f.write(json.dumps(PROBLEM) + "\n")
        problems = egca.load_problems(path, format="mbpp")
    router = egca.Router(problems, "mbpp/1")
    times = []
    for i in range(runs):
        t0 = time.perf_counter()
        r = router.route("def add(a, b):\n    return a + b\n", completion_is_body=False)
        times.append(time.perf_counter() - t0)
        assert r.mode == "CORRECT"
    rss = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    print(json.dumps({"median_ms": statistics.median(times) * 1e3, "rss_gib": rss / (1 << 30)}))
    del hold


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=4.0)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(args.child, args.runs)
        return 0
    results: dict[float, list[dict]] = {0.0: [], args.gib: []}
    for rep in range(args.repeats):
        for gib in (0.0, args.gib):
            out = subprocess.run([sys.executable, __file__, "--child", str(gib), "--runs",
                                  str(args.runs)], check=True, capture_output=True, text=True)
            results[gib].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"repeat {rep + 1}, caller {gib:g} GiB: {results[gib][-1]}", flush=True)
    med = {g: statistics.median(r["median_ms"] for r in rs) for g, rs in results.items()}
    print(f"\nper route (one test, CORRECT), median of {args.runs} routes, median of "
          f"{args.repeats} processes\n")
    print("| caller | resident | ms per route |")
    print("|---|---|---|")
    for g, rs in results.items():
        print(f"| {'empty' if g == 0 else f'{g:g} GiB held'} | "
              f"{statistics.median(r['rss_gib'] for r in rs):.2f} GiB | {med[g]:.2f} |")
    print(f"\nratio {args.gib:g} GiB / empty: {med[args.gib] / med[0.0]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
