#!/usr/bin/env python3
"""Localization accuracy of the divergence spans without a catalogue: the bug line of a
failing sample is the line a one-token repair fixes (Python 3 standard library only).

    localize_repair.py FAMILY_DIR RUN_DIR [RUN_DIR ...] [--per-run N] [--out FILE]
                       [--egca-batch PATH] [--workers N] [--work DIR]

report.py's localization() recognizes a LOGIC sample only when it is, to the character, a
near-miss of the family's catalogue. That works on v0, whose policy writes the catalogue's
programs, but hardly on v1, whose programs carry their own names, comments, distractor
statements and helpers (issue 23). This script needs no catalogue: for each LOGIC sample it
tries every one-token repair of the kinds the generator's mutations undo (a comparison
operator replaced by another, an integer literal moved by one) and routes every repaired
program with egca-batch; a line is a repair line when some repair of it passes every test.
A sample with exactly one repair line is "localized" and each span (earliest, last, random)
is scored on whether it covers that line. Samples with no repair line (the bug needs
another kind of edit) or several are counted, not scored.

On v0 the same method can be checked against the catalogue: for catalogued samples the
repair line should be the catalogue's bug line ("catalogue_agreement" in the output: of the
catalogued samples, those localized, and of those, those whose line is the catalogue's).

Writes (--out) a JSON object: per run directory and per variant in all, the counts
(logic, sampled, localized, ambiguous, unrepaired), hits and missing per span, and the
catalogue agreement where the family has a catalogue.
"""
import argparse
import glob
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tokenize

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = ("<", "<=", ">", ">=", "==", "!=")
SPANS = ("earliest", "last", "random")


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def repairs(program):
    """Every one-token repair candidate of `program`: (line, repaired program). Comparison
    operators become each other comparison operator; integer literals move by one (and a
    literal 0 or 1 also becomes the other). Tokens in comments and strings are not touched."""
    lines = program.splitlines(keepends=True)
    out = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(program).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return out
    for tok in tokens:
        (row, col), (erow, ecol) = tok.start, tok.end
        if row != erow or row > len(lines):
            continue
        text = tok.string
        if tok.type == tokenize.OP and text in OPS:
            replacements = [op for op in OPS if op != text]
        elif tok.type == tokenize.NUMBER and re.fullmatch(r"[0-9]+", text):
            value = int(text)
            replacements = sorted({str(value + 1), str(max(value - 1, 0))} - {text})
        else:
            continue
        line = lines[row - 1]
        for new in replacements:
            repaired = lines[:row - 1] + [line[:col] + new + line[ecol:]] + lines[row:]
            out.append((row, "".join(repaired)))
    return out


def repair_lines(candidates, passed):
    """Lines with at least one passing repair. candidates: [(line, program)];
    passed: [bool] in the same order."""
    return sorted({line for (line, _), ok in zip(candidates, passed) if ok})


def score(samples, lines_of):
    """samples: [{"spans": ..., "key": ...}]; lines_of: key -> repair lines. Counts."""
    stats = dict(sampled=len(samples), localized=0, ambiguous=0, unrepaired=0,
                 hits={s: 0 for s in SPANS}, missing={s: 0 for s in SPANS})
    for s in samples:
        lines = lines_of.get(s["key"], [])
        if not lines:
            stats["unrepaired"] += 1
            continue
        if len(lines) > 1:
            stats["ambiguous"] += 1
            continue
        stats["localized"] += 1
        bug = lines[0]
        for which in SPANS:
            span = (s.get("spans") or {}).get(which)
            if span is None:
                stats["missing"][which] += 1
            elif span["line"] <= bug <= span["end_line"]:
                stats["hits"][which] += 1
    return stats


def logic_samples(run_dir, per_run, rng):
    """Up to per_run distinct LOGIC samples of a run (every step's rollouts, a seeded draw)."""
    seen, pool = set(), []
    for path in sorted(glob.glob(os.path.join(run_dir, "rollouts", "step-*.jsonl"))):
        for r in read_jsonl(path):
            if r.get("mode") != "LOGIC":
                continue
            key = (r["problem_id"], r["program"])
            if key in seen:
                continue
            seen.add(key)
            pool.append(dict(key=key, spans=r.get("spans"), problem_id=r["problem_id"],
                             program=r["program"]))
    logic = len(pool)
    if per_run and len(pool) > per_run:
        pool = rng.sample(pool, per_run)
    return logic, pool


def route(egca_batch, family_dir, programs, work, workers):
    """programs: [(problem_id, program)] -> [mode] through egca-batch (the trainer's routing)."""
    return [rec and rec.get("mode") for rec in route_records(egca_batch, family_dir, programs, work,
                                                              workers)]


def route_records(egca_batch, family_dir, programs, work, workers, tool="localize_repair.py"):
    """programs: [(problem_id, program)] -> [egca-batch sample record or None], in order."""
    os.makedirs(work, exist_ok=True)
    problems = os.path.join(work, "problems.jsonl")
    with open(problems, "w") as f:
        for split in ("train", "heldout", "validation"):
            path = os.path.join(family_dir, split + ".jsonl")
            if os.path.exists(path):
                for line in open(path):
                    if line.strip():
                        f.write(line if line.endswith("\n") else line + "\n")
    samples = os.path.join(work, "samples.jsonl")
    with open(samples, "w") as f:
        for i, (pid, program) in enumerate(programs):
            f.write(json.dumps(dict(problem_id=pid, completion="```python\n" + program + "\n```",
                                    sample_id=str(i))) + "\n")
    store = os.path.join(work, "store")
    # egca-batch resumes a store it finds; these samples are new each time.
    shutil.rmtree(store, ignore_errors=True)
    cmd = [egca_batch, "run", "--problems", problems, "--format", "mbpp", "--samples", samples,
           "--store", store, "--workers", str(workers), "--progress", "never"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{tool}: egca-batch exit {r.returncode}: {r.stderr.strip()[-400:]}")
    records = [None] * len(programs)
    for rec in read_jsonl(os.path.join(store, "results.jsonl")):
        if rec.get("type") == "sample":
            records[int(rec["origin"].rsplit(":", 1)[1]) - 1] = rec
    return records


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family_dir")
    ap.add_argument("run_dirs", nargs="+")
    ap.add_argument("--per-run", type=int, default=60, help="LOGIC samples per run (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--egca-batch", default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--work", default=None, help="scratch directory (default: FAMILY_DIR/repair-work)")
    a = ap.parse_args()
    for d in [a.family_dir] + a.run_dirs:
        if not os.path.isdir(d):
            sys.exit(f"localize_repair.py: {d}: not a directory")
    egca_batch = a.egca_batch or os.path.join(os.environ.get("EGCA_BUILD_DIR", "build"), "tools",
                                              "egca-batch", "egca-batch")
    if not os.access(egca_batch, os.X_OK):
        sys.exit(f"localize_repair.py: --egca-batch {egca_batch}: not an executable")
    rng = random.Random(a.seed)
    per_run, candidates = {}, {}
    for d in a.run_dirs:
        logic, samples = logic_samples(d, a.per_run, rng)
        per_run[d] = (logic, samples)
        for s in samples:
            if s["key"] not in candidates:
                candidates[s["key"]] = repairs(s["program"])
    flat = [(key[0], prog) for key, cands in candidates.items() for _, prog in cands]
    print(f"localize_repair.py: {len(candidates)} samples, {len(flat)} repaired programs", file=sys.stderr)
    modes = route(egca_batch, a.family_dir, flat, a.work or os.path.join(a.family_dir, "repair-work"),
                  a.workers)
    lines_of, at = {}, 0
    for key, cands in candidates.items():
        passed = [m == "CORRECT" for m in modes[at:at + len(cands)]]
        at += len(cands)
        lines_of[key] = repair_lines(cands, passed)
    catalogue = {}
    nm = os.path.join(a.family_dir, "near_misses.jsonl")
    if os.path.exists(nm):
        catalogue = {(m["problem_id"], m["program"].rstrip()): m["bug_line"] for m in read_jsonl(nm)}
    result = dict(family=a.family_dir, per_run_limit=a.per_run, runs={}, total=None)
    everything = []
    agree = dict(catalogued=0, localized=0, agreeing=0)
    for d, (logic, samples) in per_run.items():
        stats = score(samples, lines_of)
        stats["logic"] = logic
        result["runs"][os.path.basename(d.rstrip("/"))] = stats
        everything += samples
    for key, lines in lines_of.items():
        bug = catalogue.get((key[0], key[1].rstrip()))
        if bug is not None:
            agree["catalogued"] += 1
            agree["localized"] += len(lines) == 1
            agree["agreeing"] += lines == [bug]
    total = score(everything, lines_of)
    total["logic"] = sum(logic for logic, _ in per_run.values())
    result["total"] = total
    result["catalogue_agreement"] = agree
    text = json.dumps(result, indent=1, sort_keys=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    t = total
    print(f"{t['sampled']} sampled LOGIC samples: {t['localized']} localized, {t['ambiguous']} ambiguous, "
          f"{t['unrepaired']} without a one-token repair")
    for which in SPANS:
        n = t["localized"]
        print(f"  {which:8s} covers the repair line: {t['hits'][which]}/{n}"
              + (f" ({t['hits'][which] / n:.3f})" if n else "") + f", absent {t['missing'][which]}")
    if agree["catalogued"]:
        print(f"  catalogued samples: {agree['catalogued']}, localized {agree['localized']}, "
              f"their repair line the catalogue's bug line: {agree['agreeing']}/{agree['localized']}")


if __name__ == "__main__":
    main()
