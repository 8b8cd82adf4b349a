#!/usr/bin/env python3
"""Does `credit.syntax: cause` cover a name slip's line more often than `span` (the raising
statement)? (issue 37; Python 3 standard library only.)

    syntax_cause.py FAMILY_DIR [--per-program N] [--seed S] [--egca-batch PATH]
                    [--workers N] [--work DIR] [--out FILE]

The credit study's v1 rollouts (docs/results/credit-study) are not kept in the repository,
so this measures on programs made the way v1's NameErrors arise: v1's samples name their
variables from the generator's pools (make_family.RENAMES: the list `xs` may be `nums`,
`seq`, `data`...), and a policy that mixes two spellings of one variable writes a name the
program never binds. From every correct corpus program of the family, up to N slips are
drawn (seeded): one occurrence of a pooled name, a binding site or a use, is replaced by
another spelling of the same pool that the program does not contain. Each slipped program is
routed with egca-batch (the trainer's router); for the samples that raise NameError or
UnboundLocalError, the slipped line is the bug (a one-token edit made it), and each span,
`error` (what `syntax: span` credits) and `cause` (what `syntax: cause` credits), is scored
on whether it covers that line, and on its size in lines.

Writes (--out) a JSON object: counts (programs, slips, routed modes, name errors), per span
the hits and the mean lines covered, and the same split by where the slip was (the use that
raised, a binding site, another use).
"""
import argparse
import io
import json
import os
import random
import sys
import tokenize

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_family import RENAMES  # noqa: E402  (the generator's name pools)
from localize_repair import route_records  # noqa: E402  (egca-batch routing, shared)

POOL_OF = {name: key for key, names in RENAMES.items() for name in names}


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def program_of(completion):
    """The code inside the completion's ```python fence (the corpus's form)."""
    body = completion.split("```python\n", 1)[-1]
    return body.rsplit("```", 1)[0].rstrip("\n")


def slips(program):
    """Every (line, col, old, new) that replaces one pooled name's occurrence by another
    spelling of its pool that the program does not contain."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(program).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    present = {t.string for t in tokens if t.type == tokenize.NAME}
    out = []
    for t in tokens:
        if t.type != tokenize.NAME or t.string not in POOL_OF:
            continue
        for other in RENAMES[POOL_OF[t.string]]:
            if other != t.string and other not in present:
                out.append((t.start[0], t.start[1], t.string, other))
    return out


def apply(program, slip):
    line, col, old, new = slip
    lines = program.split("\n")
    text = lines[line - 1]
    assert text[col:col + len(old)] == old
    lines[line - 1] = text[:col] + new + text[col + len(old):]
    return "\n".join(lines)


def route(egca_batch, family_dir, programs, work, workers):
    """programs: [(problem_id, program)] -> [record or None] through egca-batch."""
    return route_records(egca_batch, family_dir, programs, work, workers, tool="syntax_cause.py")


def lines_of(span):
    """(first line, last line) of a record's span in the program, or None. A stored span is
    {"program": [begin_byte, end_byte, begin_line, begin_col, end_line, end_col], ...}."""
    if not span or not span.get("program"):
        return None
    p = span["program"]
    return p[2], p[4]


def score(records, slipped_lines):
    """Hits and sizes of the error and cause spans over the name-error records."""
    out = dict(modes={}, name_errors=0, by_kind={},
               spans={k: dict(hits=0, lines=0, missing=0) for k in ("error", "cause")},
               by_place={})
    for rec, line in zip(records, slipped_lines):
        if rec is None:
            continue
        out["modes"][rec["mode"]] = out["modes"].get(rec["mode"], 0) + 1
        kind = rec.get("error_type") or rec.get("error_message", "").split(":", 1)[0]
        if rec["mode"] != "SYNTAX" or kind not in ("NameError", "UnboundLocalError"):
            continue
        out["name_errors"] += 1
        out["by_kind"][kind] = out["by_kind"].get(kind, 0) + 1
        err = lines_of(rec.get("error"))
        if err is None:
            place = "no error span"
        elif err[0] <= line <= err[1]:
            place = "the raising statement"
        else:
            place = "before the raising statement" if line < err[0] else "after it"
        bucket = out["by_place"].setdefault(place, dict(n=0, error=0, cause=0))
        bucket["n"] += 1
        for key in ("error", "cause"):
            span = lines_of(rec.get(key))
            s = out["spans"][key]
            if span is None:
                s["missing"] += 1
                continue
            s["lines"] += span[1] - span[0] + 1
            if span[0] <= line <= span[1]:
                s["hits"] += 1
                bucket[key] += 1
    n = max(1, out["name_errors"])
    for s in out["spans"].values():
        s["share"] = s["hits"] / n
        s["mean_lines"] = s["lines"] / n
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family_dir")
    ap.add_argument("--per-program", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--egca-batch", default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--work", default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    egca_batch = a.egca_batch or os.path.join(HERE, "..", "..", "build", "tools", "egca-batch",
                                              "egca-batch")
    corpus = [r for r in read_jsonl(os.path.join(a.family_dir, "corpus.jsonl"))
              if r.get("kind") == "correct"]
    rng = random.Random(a.seed)
    programs, slipped = [], []
    for r in corpus:
        program = program_of(r["completion"])
        candidates = slips(program)
        for s in rng.sample(candidates, min(a.per_program, len(candidates))):
            programs.append((f"mbpp/{r['task_id']}", apply(program, s)))
            slipped.append(s[0])
    work = a.work or os.path.join("/tmp", f"syntax_cause_{os.getpid()}")
    records = route(egca_batch, a.family_dir, programs, work, a.workers)
    result = dict(family=os.path.abspath(a.family_dir), programs=len(corpus), slips=len(programs),
                  per_program=a.per_program, seed=a.seed, **score(records, slipped))
    text = json.dumps(result, indent=1, sort_keys=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
