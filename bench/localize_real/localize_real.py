#!/usr/bin/env python3
"""Localization accuracy on real LLM programs that do not look like their reference (issue 36).

Two ground truths, both built from the published programs in ../shared/data (HumanEval):

  repair   a failing (LOGIC) program whose bug is repairable by one token: every one-token
           repair of the kinds examples/learns/localize_repair.py tries (a comparison
           operator replaced by another, an integer literal moved by one) is graded, and a
           program with exactly one line whose repair passes every test has that line as
           its bug line;
  fixdiff  a failing program of a self-repair history (LDB's `implementations`, Reflexion's)
           followed, in the same history, by a passing program one to three changed lines
           away: the failing program's changed (replaced or deleted) lines are the truth.

Every program is routed against HumanEval's canonical solution (not against the repair or the
fix): the question is whether the earliest divergence finds the bug in a program written in
its own way. A span "covers" the truth when one of the truth lines lies in its line range.

    localize_real.py build --data ../shared/data --egca-batch B --work DIR
    localize_real.py score --work DIR --egca-batch B --label NAME [--out FILE]
    localize_real.py compare --work DIR --labels A B
    localize_real.py build-v1 --work DIR     (learns family sets: set-v1 and set-v0)
    localize_real.py score --work DIR --set set-v1 --problems DIR/family-v1/problems.jsonl \
        --format mbpp --egca-batch B --label NAME

`build` grades every distinct program once (a seeded draw of CodeT's samples, every program of
the MapCoder, LDB and Reflexion HumanEval runs), grades the one-token repairs of the LOGIC
ones, and writes DIR/set.jsonl (one record per scored program: set, model, problem, program,
truth lines, split). `score` routes the set's programs with the given egca-batch and writes
DIR/score-NAME.json: hits of earliest / last / random per set, per model, per split and per
divergence kind, with 95% bootstrap intervals and the paired differences earliest - last and
earliest - random. `compare` prints two scores side by side with the programs whose hit changed.

Splits: problems with an even HumanEval number are `dev` (the misses one reads to find causes),
odd ones `check` (read only as figures). Standard library only.
"""
import argparse
import collections
import difflib
import glob
import gzip
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tokenize

OPS = ("<", "<=", ">", ">=", "==", "!=")
SPANS = ("earliest", "last", "random")


def read_jsonl(path):
    opener = gzip.open if path.endswith(".gz") else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f.read().split("\n"):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # mapcoder's one broken line (data README): not a program
    return out


def write_jsonl(path, records):
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def split_of(problem_id):
    n = int(problem_id.rsplit("/", 1)[1])
    return "dev" if n % 2 == 0 else "check"


# ---- one-token repairs (the method of examples/learns/localize_repair.py) -----------------


def repairs(program):
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


def changed_lines(bad, good):
    """Lines (1-based) of `bad` that the diff to `good` replaces or deletes, and the number of
    changed lines on both sides; pure insertions leave no line of `bad` to name."""
    a, b = bad.split("\n"), good.split("\n")
    # Lines compared without trailing blanks; a changed blank line is no bug line.
    ka, kb = [l.rstrip() for l in a], [l.rstrip() for l in b]
    truth, size = [], 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        size += max(sum(1 for l in ka[i1:i2] if l.strip()), sum(1 for l in kb[j1:j2] if l.strip()))
        truth += [n + 1 for n in range(i1, i2) if ka[n].strip()]
    return truth, size


# ---- the published programs -----------------------------------------------------------------


def collect_programs(data, codet_per_problem, seed):
    """[(model, problem_id, program, is_body, history id or None, position)]"""
    rng = random.Random(seed)
    # CodeT records carry the prompt, not the task id (and are not in HumanEval's order): the
    # last function the prompt defines is the problem's entry point.
    task_of = {p["entry_point"]: p["task_id"] for p in read_jsonl(os.path.join(data, "humaneval/HumanEval.jsonl.gz"))}
    programs = []
    codet = "samples/codet/HumanEval_codegen16B_temp0.8_topp0.95_num100.jsonl.gz"
    for rec in read_jsonl(os.path.join(data, codet)):
        names = re.findall(r"^def (\w+)\(", rec["prompt"], re.M)
        pid = task_of.get(names[-1]) if names else None
        if pid is None:
            continue
        samples = rec["samples"]
        for k in sorted(rng.sample(range(len(samples)), min(codet_per_problem, len(samples)))):
            programs.append(("codet/codegen16B", pid, samples[k], True, None, k))
    tmp = tempfile.mkdtemp(prefix="localize_real_")
    try:
        for name in ("ldb/ldb.tar.gz", "mapcoder/final-results.tar.gz", "reflexion/programming_runs.tar.gz"):
            with tarfile.open(os.path.join(data, "samples", name)) as t:
                t.extractall(tmp)
        files = sorted(glob.glob(os.path.join(tmp, "results/ldb/humaneval/**/*.jsonl"), recursive=True))
        files += sorted(glob.glob(os.path.join(tmp, "final-results/*/HumanEval/*.jsonl")))
        files += [os.path.join(tmp, "programming_runs/root/reflexion_humaneval_py_pass_at_1/"
                               "reflexion_humaneval_py_pass_at_1.jsonl")]
        for path in files:
            rel = os.path.relpath(path, tmp)
            tool = {"results": "ldb", "final-results": "mapcoder", "programming_runs": "reflexion"}.get(
                rel.split("/")[0], rel.split("/")[0])
            if tool == "ldb":
                model = "ldb/" + "/".join(rel.split("/")[3:]).replace("/results.jsonl", "").replace(".jsonl", "")
            elif tool == "mapcoder":
                model = "mapcoder/" + os.path.basename(path).replace(".jsonl", "")
            else:
                model = "reflexion/gpt-4"
            for rec in read_jsonl(path):
                pid = rec.get("task_id", "")
                if not re.fullmatch(r"HumanEval/\d+", str(pid)):
                    continue
                history = [p for p in (rec.get("implementations") or []) if isinstance(p, str)]
                if isinstance(rec.get("solution"), str) and (not history or history[-1] != rec["solution"]):
                    history.append(rec["solution"])
                for p in rec.get("source_codes") or []:
                    if isinstance(p, str):
                        history.append(p)
                hid = f"{model}:{pid}" if len(history) > 1 else None
                for k, p in enumerate(history):
                    if p.strip():
                        programs.append((model, pid, p, False, hid, k))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return programs


def run_batch(egca_batch, problems, samples, store, workers, timeout, fmt="auto", reuse=False,
              grade_only=False):
    if not reuse:
        shutil.rmtree(store, ignore_errors=True)
    cmd = [egca_batch, "run", "--problems", problems, "--format", fmt, "--samples", samples,
           "--store", store, "--workers", str(workers), "--progress", "never",
           "--timeout", str(timeout)] + (["--grade-only"] if grade_only else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"localize_real.py: egca-batch exit {r.returncode}: {r.stderr.strip()[-600:]}")
    recs = {}
    for rec in read_jsonl(os.path.join(store, "results.jsonl")):
        if rec.get("type") == "sample":
            recs[rec["sample_id"]] = rec
    return recs


def build(a):
    os.makedirs(a.work, exist_ok=True)
    problems = os.path.join(a.data, "humaneval/HumanEval.jsonl.gz")
    programs = collect_programs(a.data, a.codet_per_problem, a.seed)
    distinct = {}
    for model, pid, text, body, hid, k in programs:
        distinct.setdefault((pid, text, body), str(len(distinct)))
    samples = os.path.join(a.work, "programs.jsonl")
    write_jsonl(samples, [dict(problem_id=pid, completion=text, completion_is_body=body, sample_id=sid)
                          for (pid, text, body), sid in distinct.items()])
    print(f"build: {len(programs)} programs, {len(distinct)} distinct; grading", file=sys.stderr)
    graded = run_batch(a.egca_batch, problems, samples, os.path.join(a.work, "store-grade"),
                       a.workers, a.timeout, reuse=a.reuse)
    route = {key: graded.get(sid) for key, sid in distinct.items()}
    # Repair lines of every LOGIC program.
    logic = sorted({(pid, r["program"]) for (pid, _, _), r in route.items() if r and r["mode"] == "LOGIC"})
    # Histories' failing programs are all kept (the fix-diff set needs no repairs); the
    # repair set grades the repairs of a seeded draw of LOGIC programs (each repaired program
    # is routed in full: this is the expensive part).
    rng = random.Random(a.seed)
    repaired = set(rng.sample(logic, min(a.max_logic, len(logic)))) if a.max_logic else set(logic)
    cands = {key: repairs(key[1]) for key in logic if key in repaired}
    flat = [(key[0], prog) for key, cs in cands.items() for _, prog in cs]
    rsamples = os.path.join(a.work, "repairs.jsonl")
    write_jsonl(rsamples, [dict(problem_id=pid, completion=prog, completion_is_body=False, sample_id=str(i))
                           for i, (pid, prog) in enumerate(flat)])
    print(f"build: {len(logic)} LOGIC programs, {len(flat)} repaired programs; grading", file=sys.stderr)
    rgraded = run_batch(a.egca_batch, problems, rsamples, os.path.join(a.work, "store-repairs"),
                        a.workers, a.timeout, grade_only=True)
    at, lines_of = 0, {}
    for key, cs in cands.items():
        # A repair "passes" when it passes every test (a passing repair the I_cmp gate calls
        # not comparable still passes).
        ok = {line for n, (line, _) in enumerate(cs)
              if (rgraded.get(str(at + n)) or {}).get("tests", 0) > 0
              and rgraded[str(at + n)]["passed"] == rgraded[str(at + n)]["tests"]}
        at += len(cs)
        lines_of[key] = sorted(ok)
    models_of = collections.defaultdict(set)
    for model, pid, text, body, hid, k in programs:
        r = route[(pid, text, body)]
        if r:
            models_of[(pid, r["program"])].add(model)
    out = []
    counts = collections.Counter()
    for key in logic:
        if key not in lines_of:
            continue
        lines = lines_of[key]
        counts["unrepaired" if not lines else "ambiguous" if len(lines) > 1 else "localized"] += 1
        if len(lines) == 1:
            for model in sorted(models_of[key]):
                out.append(dict(set="repair", model=model, problem_id=key[0], program=key[1],
                                truth=lines, split=split_of(key[0])))
    # Fix-diff pairs from self-repair histories.
    histories = collections.defaultdict(list)
    for model, pid, text, body, hid, k in programs:
        if hid:
            histories[hid].append((k, model, pid, route[(pid, text, body)]))
    seen = set()
    for hid, items in sorted(histories.items()):
        items.sort(key=lambda x: x[0])
        for n, (k, model, pid, bad) in enumerate(items):
            if not bad or bad["mode"] != "LOGIC" or (model, pid, bad["program"]) in seen:
                continue
            for _, _, _, good in items[n + 1:]:
                if not good or good["mode"] != "CORRECT":
                    continue
                truth, size = changed_lines(bad["program"], good["program"])
                if truth and 1 <= size <= 3:
                    seen.add((model, pid, bad["program"]))
                    out.append(dict(set="fixdiff", model=model, problem_id=pid, program=bad["program"],
                                    truth=truth, split=split_of(pid)))
                    counts["fixdiff"] += 1
                    break
    write_jsonl(os.path.join(a.work, "set.jsonl"), out)
    print(json.dumps(dict(counts)), file=sys.stderr)


def build_v1(a):
    """The learns family's v1 surface on every catalogued near-miss (the programs the credit
    study's v1 policy was pre-trained to write; its rollouts are not kept): DIR/family-v1 and
    DIR/set-v1.jsonl, the truth being the near-miss's bug line in the surfaced program; and
    DIR/set-v0.jsonl, the same near-misses as the catalogue writes them (the v0 surface)."""
    here = os.path.dirname(os.path.abspath(__file__))
    learns = os.path.join(here, "..", "..", "examples", "learns")
    family = os.path.join(a.work, "family-v1")
    subprocess.run([sys.executable, os.path.join(learns, "make_family.py"), family, "--variant", "v1",
                    "--seed", str(a.seed)], check=True, capture_output=True)
    sys.path.insert(0, learns)
    import make_family  # noqa: E402 (the generator's own surface functions)
    rng = random.Random(f"{a.seed}/localize_real")
    code = {}
    for split in ("train", "heldout"):
        for p in read_jsonl(os.path.join(family, split + ".jsonl")):
            code[f"mbpp/{p['task_id']}"] = p["code"]
    with open(os.path.join(family, "problems.jsonl"), "w") as f:
        for split in ("train", "heldout"):
            f.write(open(os.path.join(family, split + ".jsonl")).read())
    out = []
    for m in read_jsonl(os.path.join(family, "near_misses.jsonl")):
        for _ in range(a.plans):
            _, program, line = make_family.surfaced_pair(code[m["problem_id"]], m["program"],
                                                         make_family.surface_plan(rng))
            n = int(m["problem_id"].split("/")[1])
            out.append(dict(set="learns-v1", model=m["bug_kind"], problem_id=m["problem_id"], program=program,
                            truth=[line], split="dev" if n % 2 == 0 else "check"))
    if a.max and len(out) > a.max:
        out = rng.sample(out, a.max)
    write_jsonl(os.path.join(a.work, "set-v1.jsonl"), out)
    print(f"build-v1: {len(out)} programs", file=sys.stderr)
    # v0: the same near-misses as the catalogue writes them (the first study's v0 surface),
    # the truth being the catalogue's bug line; scored against the same problems.
    v0 = [dict(set="learns-v0", model=m["bug_kind"], problem_id=m["problem_id"], program=m["program"],
               truth=[m["bug_line"]], split="dev" if int(m["problem_id"].split("/")[1]) % 2 == 0 else "check")
          for m in read_jsonl(os.path.join(family, "near_misses.jsonl"))]
    if a.max and len(v0) > a.max:
        v0 = rng.sample(v0, a.max)
    write_jsonl(os.path.join(a.work, "set-v0.jsonl"), v0)
    print(f"build-v1: {len(v0)} v0 programs (set-v0)", file=sys.stderr)


# ---- scoring ---------------------------------------------------------------------------------


def span_lines(span):
    """(first line, last line) of an egca-batch span [begin_byte, end_byte, begin line,
    begin column, end line, end column]; a span ending at column 0 ends on the line before."""
    p = (span or {}).get("program")
    if not p:
        return None
    lo, hi = p[2], p[4]
    if p[5] == 0 and hi > lo:
        hi -= 1
    return lo, hi


def covers(span, truth):
    lines = span_lines(span)
    return bool(lines) and any(lines[0] <= t <= lines[1] for t in truth)


def miss_class(span, truth, hit):
    """hit; none (no span); off_by_1_2 (within two lines of a truth line); early (before it:
    a harmless difference or a wrong pairing came first); late (after it: where the wrong
    value became visible, e.g. a return, when the reference has no intermediate state)."""
    if hit:
        return "hit"
    lines = span_lines(span)
    if not lines:
        return "none"
    d = min((lines[0] - t for t in truth), key=abs)
    if abs(d) <= 2:
        return "off_by_1_2"
    return "early" if d < 0 else "late"


def interval(hits, rng, reps=2000):
    """95% bootstrap interval of the mean of `hits` (0/1 or differences)."""
    if not hits:
        return None
    n = len(hits)
    means = sorted(sum(hits[rng.randrange(n)] for _ in range(n)) / n for _ in range(reps))
    return [round(means[int(0.025 * reps)], 3), round(means[int(0.975 * reps) - 1], 3)]


def summarize(rows, rng):
    out = dict(n=len(rows))
    for s in SPANS:
        h = [r[s] for r in rows]
        out[s] = round(sum(h) / len(h), 3) if h else None
        out[s + "_ci"] = interval(h, rng)
    for s in ("last", "random"):
        d = [r["earliest"] - r[s] for r in rows]
        out["earliest_minus_" + s + "_ci"] = interval(d, rng)
    out["localized"] = sum(r["localized"] for r in rows)
    return out


def score(a):
    records = read_jsonl(os.path.join(a.work, a.set + ".jsonl"))
    problems = a.problems or os.path.join(a.data, "humaneval/HumanEval.jsonl.gz")
    distinct = {}
    for r in records:
        distinct.setdefault((r["problem_id"], r["program"]), str(len(distinct)))
    label = f"{a.set}-{a.label}"
    samples = os.path.join(a.work, f"score-{label}-samples.jsonl")
    write_jsonl(samples, [dict(problem_id=pid, completion=prog, completion_is_body=False, sample_id=sid)
                          for (pid, prog), sid in distinct.items()])
    routed = run_batch(a.egca_batch, problems, samples, os.path.join(a.work, f"store-{label}"),
                       a.workers, a.timeout, a.format, reuse=a.reuse)
    rows = []
    for r in records:
        rec = routed.get(distinct[(r["problem_id"], r["program"])]) or {}
        if rec.get("program") != r["program"]:
            continue  # not the same program text (never expected): lines would not match
        row = dict(set=r["set"], model=r["model"], problem=r["problem_id"], split=r["split"],
                   program_key=distinct[(r["problem_id"], r["program"])],
                   truth=r["truth"], mode=rec.get("mode"), localized=bool(rec.get("earliest")),
                   kind=rec.get("divergence_kind") or "none",
                   line=(span_lines(rec.get("earliest")) or (None,))[0],
                   confidence=rec.get("localization_confidence"))
        for s in SPANS:
            row[s] = int(covers(rec.get(s), r["truth"]))
        row["miss_class"] = miss_class(rec.get("earliest"), r["truth"], row["earliest"])
        rows.append(row)
    rng = random.Random(0)
    result = dict(label=a.label, egca_batch=a.egca_batch, sets={})
    for name in sorted({r["set"] for r in rows}):
        mine = [r for r in rows if r["set"] == name]
        distinct_rows = {}
        for r in mine:
            distinct_rows.setdefault((r["problem"], tuple(r["truth"]), r["line"], r["model"].split("/")[0]), r)
        entry = dict(all=summarize(mine, rng))
        for split in ("dev", "check"):
            entry[split] = summarize([r for r in mine if r["split"] == split], rng)
        entry["by_model"] = {m: summarize([r for r in mine if r["model"] == m], rng)
                             for m in sorted({r["model"] for r in mine})}
        entry["by_kind"] = {k: summarize([r for r in mine if r["kind"] == k], rng)
                            for k in sorted({r["kind"] for r in mine})}
        entry["modes"] = dict(collections.Counter(r["mode"] for r in mine))
        entry["miss_classes"] = dict(collections.Counter(r["miss_class"] for r in mine))
        # Distinct (problem, program) pairs, whatever the number of runs that wrote them.
        uniq = {}
        for r in mine:
            uniq.setdefault((r["problem"], r["program_key"]), r)
        entry["distinct"] = summarize(list(uniq.values()), rng)
        result["sets"][name] = entry
    result["rows"] = rows
    text = json.dumps(result, indent=1, sort_keys=True)
    path = a.out or os.path.join(a.work, f"score-{label}.json")
    with open(path, "w") as f:
        f.write(text + "\n")
    for name, e in result["sets"].items():
        print(f"{name}: miss classes {e['miss_classes']}")
        for part in ("distinct", "all", "dev", "check"):
            s = e[part]
            if not s["n"]:
                continue
            print(f"{name:8s} {part:5s} n={s['n']:4d} earliest {s['earliest']:.3f} {s['earliest_ci']} "
                  f"last {s['last']:.3f} random {s['random']:.3f} "
                  f"e-l {s['earliest_minus_last_ci']} e-r {s['earliest_minus_random_ci']}")


def compare(a):
    runs = [json.load(open(os.path.join(a.work, f"score-{a.set}-{l}.json"))) for l in a.labels]
    keyed = [{(r["set"], r["model"], r["problem"], tuple(r["truth"])): r for r in run["rows"]} for run in runs]
    for key in sorted(set(keyed[0]) & set(keyed[1])):
        x, y = keyed[0][key], keyed[1][key]
        if x["earliest"] != y["earliest"]:
            print(f"{'gain' if y['earliest'] else 'loss'} {key[0]} {key[1]} {key[2]} truth {list(key[3])}: "
                  f"line {x['line']} ({x['kind']}) -> {y['line']} ({y['kind']})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("build", "score"):
        p = sub.add_parser(name)
        p.add_argument("--data", default="../shared/data")
        p.add_argument("--egca-batch", required=True)
        p.add_argument("--work", required=True)
        p.add_argument("--workers", type=int, default=2)
        p.add_argument("--timeout", type=float, default=2)
        if name == "build":
            p.add_argument("--codet-per-problem", type=int, default=10)
            p.add_argument("--max-logic", type=int, default=350,
                           help="LOGIC programs whose repairs are graded (a seeded draw; 0: all)")
            p.add_argument("--seed", type=int, default=0)
            p.add_argument("--reuse", action="store_true", help="resume DIR/store-grade")
        else:
            p.add_argument("--label", required=True)
            p.add_argument("--out", default=None)
            p.add_argument("--set", default="set", help="DIR/SET.jsonl (default: set; learns-v1: set-v1)")
            p.add_argument("--problems", default=None, help="default: HumanEval (set-v1: the family's problems)")
            p.add_argument("--format", default="auto")
            p.add_argument("--reuse", action="store_true", help="resume the label's store (re-score)")
    p = sub.add_parser("build-v1")
    p.add_argument("--work", required=True)
    p.add_argument("--plans", type=int, default=2, help="surfaces drawn per near-miss")
    p.add_argument("--max", type=int, default=600, help="programs kept (a seeded draw; 0: all)")
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("compare")
    p.add_argument("--work", required=True)
    p.add_argument("--set", default="set")
    p.add_argument("--labels", nargs=2, required=True)
    a = ap.parse_args()
    for attr in ("egca_batch",):
        path = getattr(a, attr, None)
        if path is not None and not os.access(path, os.X_OK):
            sys.exit(f"localize_real.py: --egca-batch {path}: not an executable")
    {"build": build, "build-v1": build_v1, "score": score, "compare": compare}[a.cmd](a)


if __name__ == "__main__":
    main()
