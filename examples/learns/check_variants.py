#!/usr/bin/python3
"""Checks the learns task variants (issue 23) that make_family.py generates.

    check_variants.py [--variants v0 v1 v2] [--seed N] [--out DIR] [--routed-problems N]
                      [--egca-batch PATH] [--workers N] [--no-egca]

For every variant: generates the family into OUT/<variant>/ (make_family.py --variant V
--seed N), then
 1. in Python, every program of it: each reference passes all of its asserts, each catalogued
    near-miss fails at least one, each corpus completion passes all (kind correct) or fails
    at least one (kind near_miss), and (v1) each surfaced corpus near-miss differs from the
    correct program only on its bug_line;
 2. with egca-batch (the routing the trainer uses), a deterministic subset of N train
    problems: their reference, their corpus completions and up to two catalogued near-misses
    each. Correct programs must route CORRECT and near-misses must not; the table shows how
    many near-misses route LOGIC and how many have the earliest divergence on their bug line.
Writes OUT/check.json and prints a table. Exit 0 when every check holds, 1 otherwise, 2 on bad
usage. egca-batch defaults to $EGCA_BUILD_DIR/tools/egca-batch/egca-batch (EGCA_BUILD_DIR
defaults to build).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def strip_fence(completion):
    c = completion
    if c.startswith("```python\n"):
        c = c[len("```python\n"):]
    if c.endswith("\n```"):
        c = c[:-len("\n```")]
    return c


def passes(code, asserts):
    """(asserts passed, asserts run) for the family's own generated programs."""
    ok = 0
    for a in asserts:
        env = {}
        try:
            exec(code, env)
            exec(a, env)
            ok += 1
        except Exception:  # a near-miss may raise or fail the assert
            pass
    return ok, len(asserts)


def python_checks(d, variant):
    problems = {p["task_id"]: p for p in load(os.path.join(d, "train.jsonl")) + load(os.path.join(d, "heldout.jsonl"))}
    res = dict(references=0, references_failing=[], near_misses=0, near_misses_passing=[],
               corpus_correct=0, corpus_correct_failing=[], corpus_misses=0, corpus_misses_passing=[],
               corpus_bug_line_mismatch=[])
    for p in problems.values():
        res["references"] += 1
        ok, n = passes(p["code"], p["test_list"])
        if ok != n:
            res["references_failing"].append(p["task_id"])
    for m in load(os.path.join(d, "near_misses.jsonl")):
        res["near_misses"] += 1
        p = problems[int(m["problem_id"].split("/")[1])]
        ok, n = passes(m["program"], p["test_list"])
        if ok == n:
            res["near_misses_passing"].append(m["problem_id"])
    for c in load(os.path.join(d, "corpus.jsonl")):
        p = problems[c["task_id"]]
        code = strip_fence(c["completion"])
        ok, n = passes(code, p["test_list"])
        if c["kind"] == "correct":
            res["corpus_correct"] += 1
            if ok != n:
                res["corpus_correct_failing"].append(c["task_id"])
        else:
            res["corpus_misses"] += 1
            if ok == n:
                res["corpus_misses_passing"].append(c["task_id"])
            lines = code.split("\n")
            if not 1 <= c["bug_line"] <= len(lines):
                res["corpus_bug_line_mismatch"].append(c["task_id"])
    res["ok"] = not (res["references_failing"] or res["near_misses_passing"] or res["corpus_correct_failing"]
                     or res["corpus_misses_passing"] or res["corpus_bug_line_mismatch"])
    return res


def routed_checks(d, variant, n_problems, egca_batch, workers):
    train = load(os.path.join(d, "train.jsonl"))
    step = max(1, len(train) // n_problems)
    chosen = train[::step][:n_problems]
    ids = {p["task_id"] for p in chosen}
    samples, expect = [], []

    def add(pid, completion, kind, bug_line):
        samples.append(dict(problem_id=f"mbpp/{pid}", completion=completion, sample_id=str(len(samples))))
        expect.append((kind, bug_line))

    for p in chosen:
        add(p["task_id"], p["code"], "reference", None)
    for c in load(os.path.join(d, "corpus.jsonl")):
        if c["task_id"] in ids:
            add(c["task_id"], c["completion"], "corpus_" + c["kind"], c["bug_line"])
    per = {}
    for m in load(os.path.join(d, "near_misses.jsonl")):
        pid = int(m["problem_id"].split("/")[1])
        if pid in ids and per.get(pid, 0) < 2:
            per[pid] = per.get(pid, 0) + 1
            add(pid, m["program"], "catalogued_near_miss", m["bug_line"])
    work = os.path.join(d, "routed")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "problems.jsonl"), "w") as f:
        for p in chosen:
            f.write(json.dumps(dict(task_id=p["task_id"], text=p["text"], code=p["code"], test_list=p["test_list"])) + "\n")
    with open(os.path.join(work, "samples.jsonl"), "w") as f:
        for s in samples:
            f.write(json.dumps(s) + "\n")
    cmd = [egca_batch, "run", "--problems", os.path.join(work, "problems.jsonl"), "--format", "mbpp",
           "--samples", os.path.join(work, "samples.jsonl"), "--store", os.path.join(work, "store"),
           "--workers", str(workers), "--progress", "never"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return dict(ok=False, error=f"egca-batch exit {r.returncode}: {r.stderr.strip()[-400:]}")
    by_origin = {}
    for rec in load(os.path.join(work, "store", "results.jsonl")):
        if rec.get("type") == "sample":
            # origin is "samples.jsonl:<line>"
            by_origin[int(rec["origin"].rsplit(":", 1)[1]) - 1] = rec
    table = {}
    bad = []
    for i, (kind, bug_line) in enumerate(expect):
        rec = by_origin.get(i)
        row = table.setdefault(kind, dict(n=0, modes={}, earliest_on_bug_line=0))
        row["n"] += 1
        mode = rec["mode"] if rec else "MISSING"
        row["modes"][mode] = row["modes"].get(mode, 0) + 1
        correct_expected = kind in ("reference", "corpus_correct")
        if (mode == "CORRECT") != correct_expected:
            bad.append(dict(sample=i, kind=kind, mode=mode, reason=rec.get("reason") if rec else ""))
        if bug_line and rec and rec.get("earliest"):
            e = rec["earliest"]["program"]
            if e[2] <= bug_line <= e[4]:
                row["earliest_on_bug_line"] += 1
    return dict(ok=not bad, problems=len(chosen), samples=len(samples), table=table, wrong=bad[:20])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", nargs="+", default=["v0", "v1", "v2"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/learns-variants-check")
    ap.add_argument("--routed-problems", type=int, default=8)
    ap.add_argument("--egca-batch", default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-egca", action="store_true", help="only the Python checks")
    ap.add_argument("--no-python", action="store_true", help="only the egca-batch checks")
    a = ap.parse_args(argv)
    for v in a.variants:
        if v not in ("v0", "v1", "v2"):
            print(f"check_variants.py: --variants {v}: expected v0, v1 or v2", file=sys.stderr)
            return 2
    egca_batch = a.egca_batch or os.path.join(os.environ.get("EGCA_BUILD_DIR", "build"), "tools", "egca-batch", "egca-batch")
    if not a.no_egca and not os.access(egca_batch, os.X_OK):
        print(f"check_variants.py: --egca-batch {egca_batch}: not an executable (build egca-batch or pass --no-egca)",
              file=sys.stderr)
        return 2
    summary, ok = {}, True
    for v in a.variants:
        d = os.path.join(a.out, v)
        r = subprocess.run([sys.executable, os.path.join(HERE, "make_family.py"), d, "--variant", v, "--seed", str(a.seed)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"check_variants.py: make_family.py --variant {v} failed: {r.stderr.strip()[-400:]}", file=sys.stderr)
            return 1
        family = json.loads(r.stdout.strip().splitlines()[-1])
        py = dict(ok=True, skipped=True) if a.no_python else python_checks(d, v)
        entry = dict(family=family, python=py)
        if not a.no_egca:
            entry["routed"] = routed_checks(d, v, a.routed_problems, egca_batch, a.workers)
        summary[v] = entry
        ok = ok and py["ok"] and entry.get("routed", {"ok": True})["ok"]
        print(f"{v}: {family['train_problems']} train + {family['heldout_problems']} held-out problems, "
              f"{family['near_misses']} near-misses, corpus {family['corpus']}", flush=True)
        if not a.no_python:
            print(f"  python: references failing "
                  f"{len(py['references_failing'])}/{py['references']}, near-misses passing "
                  f"{len(py['near_misses_passing'])}/{py['near_misses']}, corpus correct failing "
                  f"{len(py['corpus_correct_failing'])}/{py['corpus_correct']}, corpus near-misses passing "
                  f"{len(py['corpus_misses_passing'])}/{py['corpus_misses']}", flush=True)
        if "routed" in entry:
            rt = entry["routed"]
            if "error" in rt:
                print(f"  egca-batch: {rt['error']}")
                continue
            print(f"  egca-batch on {rt['problems']} train problems, {rt['samples']} programs:")
            print("  | programs | n | routes | earliest divergence on the bug line |")
            print("  |---|---|---|---|")
            for kind, row in rt["table"].items():
                modes = ", ".join(f"{m} {c}" for m, c in sorted(row["modes"].items()))
                hit = f"{row['earliest_on_bug_line']}/{row['n']}" if "miss" in kind else "-"
                print(f"  | {kind} | {row['n']} | {modes} | {hit} |")
            for w in rt["wrong"]:
                print(f"  WRONG: {w}")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "check.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print("all checks hold" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
