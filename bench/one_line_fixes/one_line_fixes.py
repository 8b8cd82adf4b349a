#!/usr/bin/env python3
"""Localization accuracy on buggy/fixed pairs built from real samples.

From an egca-batch store of HumanEval samples (e.g. the CodeT run of docs/results), every
failing LOGIC program is paired with a passing program of the same problem that differs from
it in exactly one line (same number of lines): the passing one is the "fixed" program, the
differing line the fix. Each pair is routed with egca-trace (the failing program against the
passing one, the problem's official test), and the earliest divergence is checked against
the fix line. At most one pair per failing program (the passing program with the smallest
key), and pairs are taken in (problem, key) order.

  python3 bench/one_line_fixes/one_line_fixes.py --store runs/codet \\
      --problems ../shared/data/humaneval/HumanEval.jsonl.gz \\
      --egca-trace build/tools/egca-trace/egca-trace [--limit 300] [--json]
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile


def read_jsonl(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                yield json.loads(line)


def one_line_diff(a, b):
    """1-based line where a and b differ when that is their only difference, else None."""
    la, lb = a.split("\n"), b.split("\n")
    if len(la) != len(lb):
        return None
    diff = [i for i, (x, y) in enumerate(zip(la, lb)) if x != y]
    return diff[0] + 1 if len(diff) == 1 else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--problems", required=True)
    ap.add_argument("--egca-trace", required=True)
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--timeout", default="2")
    ap.add_argument("--json", action="store_true", help="one JSON line per pair")
    args = ap.parse_args()

    problems = {p["task_id"]: p for p in read_jsonl(args.problems)}
    by_problem = {}
    for r in read_jsonl(os.path.join(args.store, "results.jsonl")):
        if r.get("type") != "sample" or r.get("empty") or not r.get("program"):
            continue
        if r.get("dup", 0) != 0:
            continue
        by_problem.setdefault(r["problem"], []).append(r)

    pairs = []
    for pid in sorted(by_problem):
        recs = sorted(by_problem[pid], key=lambda r: r["key"])
        passing = [r for r in recs if r["tests"] > 0 and r["passed"] == r["tests"]]
        for bad in recs:
            if bad["mode"] != "LOGIC":
                continue
            for good in passing:
                line = one_line_diff(bad["program"], good["program"])
                if line is not None:
                    pairs.append((pid, bad, good, line))
                    break
    pairs = pairs[: args.limit]

    hits = localized = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, (pid, bad, good, line) in enumerate(pairs):
            p = problems[pid]
            files = {}
            for name, text in (("cand.py", bad["program"]), ("ref.py", good["program"]),
                               ("test.py", p["test"])):
                files[name] = os.path.join(tmp, name)
                with open(files[name], "w", encoding="utf-8") as f:
                    f.write(text)
            out = subprocess.run(
                [args.egca_trace, files["cand.py"], files["ref.py"], "--tests", files["test.py"],
                 "--entry-point", p["entry_point"], "--timeout", args.timeout, "--json"],
                capture_output=True, text=True)
            route = json.loads(out.stdout) if out.returncode == 0 else {}
            earliest = ((route.get("divergence") or {}).get("earliest") or {})
            got = earliest.get("line")
            hit = got == line
            localized += got is not None
            hits += hit
            if args.json:
                print(json.dumps({"problem": pid, "key": bad["key"], "fixed_key": good["key"],
                                  "fix_line": line, "mode": route.get("mode"),
                                  "earliest_line": got, "hit": hit,
                                  "error": out.stderr.strip() if out.returncode else ""}))
    total = len(pairs)
    print(f"pairs={total} localized={localized} earliest on the fix line={hits}"
          f" ({100.0 * hits / max(1, total):.1f}% of pairs,"
          f" {100.0 * hits / max(1, localized):.1f}% of localized)", file=sys.stderr)


if __name__ == "__main__":
    main()
