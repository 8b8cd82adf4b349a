#!/usr/bin/env python3
"""What one call of an assert test costs in the two-process codec (tracer/src/harness.py,
"Assert tests in two processes"), both sides in this interpreter: the test process encodes
the arguments (and the object table they reach), JSON both ways, the candidate process
decodes them and encodes its reply (the returned value and the objects that changed), the
test process decodes the reply. Process switches are not included (sandbox_throughput
measures whole executions).

    /usr/bin/python3 bench/python/harness_codec_bench.py [--calls N] [--before REV]

--before REV also times the plain-value codec of that revision's harness (one without the
object table, e.g. 9aaabd9), in alternating rounds, and prints the ratio.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# HumanEval-shaped calls: (arguments, returned value).
CASES = [
    ((3,), 9),
    (([1, 2, 3, 4, 5, 6, 7, 8, 9, 10],), [10, 9, 8]),
    (("hello world", 3), "lo w"),
    (([[1, 2], [3, 4]], 0.5), {"a": [1, 2], "b": (3, 4)}),
]


def load(source, name, path=None):
    # With `path` (its file), a harness split into rooms loads the ones beside it
    # (harness.HARNESS_ROOMS); an older revision's text (--before) is one file.
    ns = {"__name__": "harness"}
    if path is not None:
        ns["__file__"] = path
    exec(compile(source, name, "exec"), ns)
    return ns


def table_round(h, state):
    """One call with the object table (the current harness)."""
    if state.get("candidate") is None:
        state["candidate"] = h["_Graph"](-1)
    graph = h["_TestSide"].graph
    cgraph = state["candidate"]
    for args, result in CASES:
        enc = h["_Encoder"](graph, h["_test_kind_of"], h["_test_inline"], False)
        frame = {"call": "f", "args": [enc.value(a) for a in args], "kwargs": []}
        enc.drain()
        frame["objs"] = enc.entries
        frame = json.loads(h["_json_dumps"](frame))
        received = h["_apply_entries"](cgraph, frame["objs"], None, [])
        for wid, _kind, _key, body in frame["objs"]:
            cgraph.last[wid] = body
        [h["_from_wire"](x, 0, [], cgraph) for x in frame["args"]]
        wire, objs = h["_encode_result"](result, cgraph, received)
        reply = json.loads(h["_json_dumps"]({"value": wire, "objs": objs}))
        h["_apply_entries"](graph, reply["objs"], h["_test_new_object"], h["_handle_for"])
        h["_from_wire"](reply["value"], 0, h["_handle_for"], graph)


def plain_round(h, state):
    """One call with the plain-value codec (harnesses before the object table)."""
    passed = (h["_Handle"], type, h["_BuiltinFunctionType"])
    for args, result in CASES:
        frame = {"call": "f", "kwargs": [],
                 "args": [h["_to_wire"](h["_rebuild"](a, 1, passed)) for a in args]}
        frame = json.loads(h["_json_dumps"](frame))
        [h["_from_wire"](x, 0, []) for x in frame["args"]]
        reply = json.loads(h["_json_dumps"]({"value": h["_encode_result"](result)}))
        h["_from_wire"](reply["value"])


def timed(fn, h, calls):
    state = {}
    start = time.perf_counter()
    for _ in range(calls // len(CASES)):
        fn(h, state)
    return (time.perf_counter() - start) / (calls // len(CASES) * len(CASES)) * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=80000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--before", help="git revision whose plain-value codec to compare")
    args = parser.parse_args()
    path = os.path.join(ROOT, "tracer/src/harness.py")
    with open(path) as f:
        current = load(f.read(), path, path)
    before = None
    if args.before:
        try:
            source = subprocess.run(["git", "-C", ROOT, "show", args.before + ":tracer/src/harness.py"],
                                    check=True, capture_output=True, text=True).stdout
        except subprocess.CalledProcessError as exc:
            sys.exit("harness_codec_bench: --before %s: %s" % (args.before, exc.stderr.strip()))
        before = load(source, args.before + ":harness.py")
        if "_Graph" in before:
            sys.exit("harness_codec_bench: --before %s already has the object table" % args.before)
    print("| round | object table (us/call) |%s" % (" %s plain values (us/call) | ratio |" % args.before
                                                     if before else ""))
    print("|---|---|%s" % ("---|---|" if before else ""))
    for r in range(args.rounds):
        now = timed(table_round, current, args.calls)
        if before is None:
            print("| %d | %.1f |" % (r + 1, now))
        else:
            then = timed(plain_round, before, args.calls)
            print("| %d | %.1f | %.1f | %.2fx |" % (r + 1, now, then, now / then))


if __name__ == "__main__":
    main()
