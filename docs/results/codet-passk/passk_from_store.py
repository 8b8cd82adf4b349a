#!/usr/bin/env python3
"""pass@k of an egca-batch store (results.jsonl), against egca-eval's summary.json.

A sample counts as correct when it passed every test (r_hat == 1 with tests > 0), as
egca-eval counts it. pass@k is the unbiased estimator 1 - C(n-c, k) / C(n, k), averaged
over problems. Prints the overall figures of both, their difference in points, and every
problem whose count of correct samples differs.

    passk_from_store.py STORE/results.jsonl [summary.json] [--json OUT]
"""
import json
import sys
from collections import defaultdict
from math import comb


def pass_at_k(n, c, k):
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_path = None
    if "--json" in argv:
        i = argv.index("--json")
        out_path = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    n = defaultdict(int)
    c = defaultdict(int)
    with open(argv[1]) as f:
        for line_no, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except ValueError:
                print(f"{argv[1]}:{line_no}: not JSON, skipped", file=sys.stderr)
                continue
            if r.get("type") != "sample":  # header, per-problem and session lines
                continue
            p = r["problem"]
            n[p] += 1
            if r.get("tests", 0) > 0 and r.get("passed") == r.get("tests"):
                c[p] += 1
    ks = (1, 10, 100)
    overall = {}
    for k in ks:
        vals = [pass_at_k(n[p], c[p], k) for p in n if n[p] >= k]
        overall[f"pass@{k}"] = sum(vals) / len(vals) if vals else None
    result = {"problems": len(n), "samples": sum(n.values()), "overall": overall,
              "per_problem": {p: {"n": n[p], "c": c[p]} for p in sorted(n)}}
    print(f"store: {len(n)} problems, {sum(n.values())} samples")
    if len(argv) > 2:
        with open(argv[2]) as f:
            ref = json.load(f)["pass_at_k"]
        ref_c = {e["problem_id"]: (e["n"], e["c"]) for e in ref["per_problem"]}
        print("| | " + " | ".join(f"pass@{k}" for k in ks) + " |")
        print("|---|" + "---:|" * len(ks))
        print("| egca-eval (summary.json) | " +
              " | ".join(f"{100 * ref['overall'][f'pass@{k}']:.2f}" for k in ks) + " |")
        print("| this store | " + " | ".join(f"{100 * overall[f'pass@{k}']:.2f}" for k in ks) + " |")
        print("| difference, points | " + " | ".join(
            f"{100 * (overall[f'pass@{k}'] - ref['overall'][f'pass@{k}']):+.2f}" for k in ks) + " |")
        differ = [(p, ref_c.get(p), (n[p], c[p])) for p in sorted(n) if ref_c.get(p) != (n[p], c[p])]
        print(f"problems whose (n, c) differ: {len(differ)}")
        for p, before, now in differ:
            print(f"  {p}: summary.json (n, c) = {before}, store = {now}")
        result["differences"] = [{"problem": p, "before": b, "now": a} for p, b, a in differ]
        result["reference_overall"] = ref["overall"]
    else:
        print(json.dumps(overall))
    if out_path:
        with open(out_path, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
