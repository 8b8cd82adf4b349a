#!/usr/bin/python3.11
"""Checks egca-cfg's scopes and boundaries against real CPython 3.11 line events.

For every HumanEval task, the canonical program (prompt + canonical_solution) is run on its
own tests under sys.settrace; every "line" event of the program's code objects must land in
a boundary of the scope egca-cfg reports for (co_name, co_firstlineno).

    /usr/bin/python3.11 bench/cfg/check_boundaries_vs_cpython.py \
        build/tools/egca-cfg/egca-cfg ../shared/data/humaneval/HumanEval.jsonl.gz \
        [../shared/data/samples/mapcoder/final-results.tar.gz [MAX]]

With the MapCoder tarball, the final source code of every distinct solved HumanEval program
in it (up to MAX, default 2000) is checked the same way against the task's tests: LLM
programs bring helpers, lambdas, nested functions, classes and generators.

Prints events checked, events without a scope, events outside every boundary, and examples.
Run with Debian's 3.11 (the interpreter egca embeds).
"""
import gzip
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile


def boundaries(tool, path, granularity):
    args = [tool, path, "--json", "--boundaries"]
    if granularity == "statement":
        args.append("--statements")
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    scopes = {}
    for s in doc["scopes"]:
        key = (s["name"], s["first_line"])
        ranges = [(b["span"]["begin"][0], b["span"]["end"][0]) for b in s["boundaries"]]
        scopes.setdefault(key, []).append(ranges)
    return scopes


def trace(path, source, test, entry_point):
    events = []

    def tracer(frame, event, arg):
        if frame.f_code.co_filename == path:
            if event == "line":
                events.append((frame.f_code.co_name, frame.f_code.co_firstlineno, frame.f_lineno))
        return tracer

    ns = {"__name__": "__candidate__"}
    signal.alarm(10)
    try:
        code = compile(source, path, "exec")
        sys.settrace(tracer)
        exec(code, ns)
        exec(compile(test, "<test>", "exec"), ns)  # tests may use the program's globals
        ns["check"](ns[entry_point])
    except Exception as e:  # a failing reference is reported, its events still count
        print(f"  {path}: {type(e).__name__}: {str(e)[:100]}")
    finally:
        sys.settrace(None)
        signal.alarm(0)
    return events


def solved_programs(tarball, tasks, limit):
    """(name, task, source) of distinct solved HumanEval programs in MapCoder's results."""
    seen = set()
    with tarfile.open(tarball) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not member.isfile() or not member.name.endswith(".jsonl"):
                continue
            for n, raw in enumerate(tar.extractfile(member).read().split(b"\n")):
                try:
                    r = json.loads(raw)
                except ValueError:
                    continue  # the one known unparsable line, and blank lines
                if not isinstance(r, dict) or r.get("is_solved") not in (True, "True"):
                    continue
                task = tasks.get(r.get("task_id"))
                codes = r.get("source_codes") or r.get("implementations") or [r.get("solution")]
                code = codes[-1] if isinstance(codes, list) and codes else None
                if task is None or not isinstance(code, str) or code in seen:
                    continue
                if "def " + task["entry_point"] not in code:
                    code = task["prompt"] + code
                seen.add(code)
                yield f"{member.name}:{n + 1}", task, code
                if len(seen) >= limit:
                    return


def main(tool, data, tarball=None, limit=2000):
    checked = no_scope = outside = programs = 0
    examples = []
    with gzip.open(data, "rt", encoding="utf-8") as f:
        tasks = {t["task_id"]: t for t in map(json.loads, f)}
    work = [(t["task_id"], t, t["prompt"] + t["canonical_solution"]) for t in tasks.values()]
    if tarball:
        work += list(solved_programs(tarball, tasks, limit))
    with tempfile.TemporaryDirectory() as tmp:
        for index, (name, task, source) in enumerate(work):
            programs += 1
            path = os.path.join(tmp, f"p{index}.py")
            with open(path, "w", encoding="utf-8") as out:
                out.write(source)
            try:
                scopes = boundaries(tool, path, "block")
            except subprocess.CalledProcessError:
                continue  # does not parse: nothing to check (CPython cannot run it either)
            for co_name, first_line, lineno in trace(path, source, task["test"],
                                                     task["entry_point"]):
                checked += 1
                candidates = scopes.get((co_name, first_line))
                if not candidates:
                    no_scope += 1
                    if len(examples) < 10:
                        examples.append(f"{name}: no scope ({co_name}, {first_line})")
                    continue
                if not any(lo <= lineno <= hi for ranges in candidates for lo, hi in ranges):
                    outside += 1
                    if len(examples) < 10:
                        examples.append(f"{name}: {co_name}@{first_line} line {lineno}")
    print(f"programs                  {programs}")
    print(f"line events checked       {checked}")
    print(f"without a matching scope  {no_scope}")
    print(f"outside every boundary    {outside}")
    for e in examples:
        print("  " + e)
    return 0 if no_scope == 0 and outside == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None,
                  int(sys.argv[4]) if len(sys.argv) > 4 else 2000))
