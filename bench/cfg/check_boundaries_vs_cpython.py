#!/usr/bin/python3.11
"""Checks egca-cfg's scopes and boundaries against real CPython 3.11 line events.

For every HumanEval task, the canonical program (prompt + canonical_solution) is run on its
own tests under sys.settrace; every "line" event of the program's code objects must land in
a boundary of the scope egca-cfg reports for (co_name, co_firstlineno).

    /usr/bin/python3.11 bench/cfg/check_boundaries_vs_cpython.py \
        build/tools/egca-cfg/egca-cfg ../shared/data/humaneval/HumanEval.jsonl.gz

Prints events checked, events without a scope, events outside every boundary, and examples.
Run with Debian's 3.11 (the interpreter egca embeds).
"""
import gzip
import json
import os
import signal
import subprocess
import sys
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
        print(f"  {path}: {type(e).__name__}: {e}")
    finally:
        sys.settrace(None)
        signal.alarm(0)
    return events


def main(tool, data):
    checked = no_scope = outside = 0
    examples = []
    with gzip.open(data, "rt", encoding="utf-8") as f, tempfile.TemporaryDirectory() as tmp:
        for line in f:
            task = json.loads(line)
            source = task["prompt"] + task["canonical_solution"]
            path = os.path.join(tmp, task["task_id"].replace("/", "_") + ".py")
            with open(path, "w", encoding="utf-8") as out:
                out.write(source)
            scopes = boundaries(tool, path, "block")
            for name, first_line, lineno in trace(path, source, task["test"], task["entry_point"]):
                checked += 1
                candidates = scopes.get((name, first_line))
                if not candidates:
                    no_scope += 1
                    if len(examples) < 10:
                        examples.append(f"{task['task_id']}: no scope ({name}, {first_line})")
                    continue
                if not any(lo <= lineno <= hi for ranges in candidates for lo, hi in ranges):
                    outside += 1
                    if len(examples) < 10:
                        examples.append(f"{task['task_id']}: {name}@{first_line} line {lineno}")
    print(f"line events checked       {checked}")
    print(f"without a matching scope  {no_scope}")
    print(f"outside every boundary    {outside}")
    for e in examples:
        print("  " + e)
    return 0 if no_scope == 0 and outside == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
