#!/usr/bin/python3
"""Per-call Python work of the two-process assert protocol (tracer/src/harness.py), on
HumanEval's checks, stage by stage, against the one-process path's per-call work.

    /usr/bin/python3 bench/sandbox_throughput/harness_wire_bench.py \
        [--harness tracer/src/harness.py] [--data ../shared/data/humaneval/HumanEval.jsonl.gz]
        [--problems 40] [--rounds 5] [--profile] [--json]

Both processes' code runs here in one process, as two separate imports of harness.py (one
plays the test process, one the candidate process), joined by a socketpair: the test
side's _send_frame is followed at once by the candidate side's _recv_frame and _serve_one,
so every byte goes through the real encoders, JSON, write, read and strict decoders, but
no process waits for the other (the wake-ups and context switches of the real pair are
not in these figures). Timestamps split each call into stages:

  test encode     _ask_candidate up to _send_frame (the _Encoder, the frame dict)
  test send       _send_frame (json.dumps, the length prefix, write)
  cand. recv      _recv_frame (read, json.loads)
  cand. decode    _serve_one up to the program's function (the table entries, _from_wire)
  call            the program's function itself (the same in both paths; not counted)
  cand. encode    after the function up to _send_frame (_encode_result, the reply dict)
  cand. send      _send_frame
  test recv       _recv_frame
  test decode     after _recv_frame until the proxy returns (_apply_entries, _from_wire)

"one process" is the per-call work of the one-process path (_plain_result: the test's
classes listed, _rebuild). Per test (not per call) the two-process path also pays the
namespace's description and its decoding (reported apart). Times are the median over
--rounds of each call's stage, summed over calls and divided by the number of calls;
the machine's load moves them, so compare builds in the same run (--harness twice is
not supported: run the script once per harness file, back to back).
"""
from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import socket
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
_now = time.perf_counter

STAGES = ["test_encode", "test_send", "cand_recv", "cand_decode", "cand_encode",
          "cand_send", "test_recv", "test_decode"]


def load_harness(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shape(v, depth=0):
    t = type(v).__name__
    if isinstance(v, (list, tuple, set, frozenset)) and depth < 1:
        inner = sorted({shape(x, depth + 1) for x in v})
        return "%s[%s]" % (t, ",".join(inner[:2]) + (",..." if len(inner) > 2 else ""))
    return t


class Pair:
    """The two sides, joined by a socketpair, run synchronously in this process."""

    def __init__(self, path):
        self.T = load_harness(path, "harness_test_side")
        self.C = load_harness(path, "harness_candidate_side")
        self.a, self.b = socket.socketpair()
        for s in (self.a, self.b):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.T._PEER_FD = self.a.fileno()
        self.C._PEER_FD = self.b.fileno()
        self.marks = {}
        self.calls = []   # per call: {stage: seconds}, shape
        self.depth = 0
        self.inner = [0]  # calls of the program's functions in progress (only the outer timed)
        self._instrument()

    def _instrument(self):
        T, C, marks = self.T, self.C, self.marks
        real_t_send, real_t_recv = T._send_frame, T._recv_frame
        real_c_send, real_c_recv = C._send_frame, C._recv_frame
        real_ask = T._ask_candidate

        def t_send(obj):
            marks["t_send0"] = _now()
            real_t_send(obj)
            marks["t_send1"] = _now()
            if type(obj) is dict and ("call" in obj or "call_handle" in obj
                                      or "getattr" in obj or "setattr" in obj):
                c0 = _now()
                frame = real_c_recv()
                marks["c_recv"] = _now() - c0
                marks["c_serve0"] = _now()
                C._serve_one(frame)
            elif type(obj) is dict and "cbr" in obj:
                pass  # the candidate side's _ask_test reads it
            elif type(obj) is dict and obj.get("next") == 1:
                C._next_test(C._CandidateSide.namespace)

        def c_send(obj):
            marks["c_send0"] = _now()
            real_c_send(obj)
            marks["c_send1"] = _now()
            if type(obj) is dict and "cb" in obj:
                T._serve_callback(real_t_recv())

        def t_recv():
            r0 = _now()
            frame = real_t_recv()
            marks["t_recv0"], marks["t_recv1"] = r0, _now()
            return frame

        def ask(head, args, kwargs):
            if self.depth:
                return real_ask(head, args, kwargs)
            self.depth += 1
            marks.clear()
            marks["shape"] = ",".join(shape(a) for a in args) + (" kw" if kwargs else "")
            t0 = _now()
            try:
                value = real_ask(head, args, kwargs)
            finally:
                self.depth -= 1
            t1 = _now()
            m = marks
            if "fn0" in m and "c_send0" in m:
                self.calls.append({
                    "test_encode": m["t_send0"] - t0,
                    "test_send": m["t_send1"] - m["t_send0"],
                    "cand_recv": m["c_recv"],
                    "cand_decode": m["fn0"] - m["c_serve0"],
                    "call": m["fn1"] - m["fn0"],
                    "cand_encode": m["c_send0"] - m["fn1"],
                    "cand_send": m["c_send1"] - m["c_send0"],
                    "test_recv": m["t_recv1"] - m["t_recv0"],
                    "test_decode": t1 - m["t_recv1"],
                    "shape": m.get("shape", "?") + " -> " + shape(value),
                })
            return value

        T._send_frame = t_send
        C._send_frame = c_send
        T._recv_frame = t_recv
        T._ask_candidate = ask

    def timed(self, fn):
        marks, inner = self.marks, self.inner

        def wrapper(*args, **kwargs):
            if inner[0]:
                return fn(*args, **kwargs)
            inner[0] += 1
            marks["fn0"] = _now()
            try:
                return fn(*args, **kwargs)
            finally:
                marks["fn1"] = _now()
                inner[0] -= 1
        wrapper.__wrapped__ = fn
        return wrapper

    def run_problem(self, problem):
        """One HumanEval check through the two sides; returns (per-test seconds, calls)."""
        T, C = self.T, self.C
        code = compile(problem["prompt"] + problem["canonical_solution"],
                       C.CANDIDATE_FILENAME, "exec", dont_inherit=True)
        ns = {"__name__": "__candidate__", "__builtins__": C._builtins}
        exec(code, ns)
        for name, value in list(ns.items()):
            if type(value) is type(load_harness) and value.__code__.co_filename == C.CANDIDATE_FILENAME:
                ns[name] = self.timed(value)
        request = {"kind": "assert", "role": "test", "source": "",
                   "test_code": problem["test"], "entry_point": problem["entry_point"]}
        prepared = T.prepare_test(request)["prepared"]
        T.session_reset()
        first = len(self.calls)
        t0 = _now()
        # The candidate process: describe its names (as _serve_calls does) and wait.
        C._CandidateSide.graph = C._Graph(-1)
        C._CandidateSide.namespace = ns
        C._CandidateSide.limit = 2048
        C._send_frame(C._describe_namespace(ns))
        t1 = _now()
        T._TestSide.prepared = prepared
        used = T._names_used(prepared.test)
        tns = T._test_process_namespace(T._recv_frame(), T._function_under_test(prepared), used)
        t2 = _now()
        exec(prepared.test, tns)
        t3 = _now()
        calls = self.calls[first:]
        return {"describe": t1 - t0, "namespace": t2 - t1, "check": t3 - t2,
                "calls": len(calls)}


def one_process(T, problem):
    """The one-process path: the test code against _plain_result proxies; returns the
    per-call seconds spent outside the program's function (the listing of the test's
    classes and _rebuild)."""
    code = compile(problem["prompt"] + problem["canonical_solution"], T.CANDIDATE_FILENAME,
                   "exec", dont_inherit=True)
    ns = {"__name__": "__candidate__", "__builtins__": T._builtins}
    exec(code, ns)
    request = {"kind": "assert", "role": "", "source": "", "test_code": problem["test"],
               "entry_point": problem["entry_point"]}
    prepared = T.prepare_test(request)["prepared"]
    spent = []
    inner = [0]  # shared: a function the program's function calls is not timed apart

    def timed_function(fn):
        def wrapper(*args, **kwargs):
            if inner[0]:
                return fn(*args, **kwargs)
            inner[0] += 1
            f0 = _now()
            try:
                return fn(*args, **kwargs)
            finally:
                spent.append(_now() - f0)
                inner[0] -= 1
        return wrapper
    real_plain = T._plain_result
    outer = []

    def plain_result(fn, test_ns, program_ids):
        proxy = real_plain(timed_function(fn), test_ns, program_ids)

        def timed(*args, **kwargs):
            t0 = _now()
            n = len(spent)
            value = proxy(*args, **kwargs)
            outer.append((_now() - t0) - sum(spent[n:]))
            return value
        return timed
    T._plain_result = plain_result
    try:
        tns = T._test_namespace(ns)
    finally:
        T._plain_result = real_plain
    exec(prepared.test, tns)
    return outer


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--harness", default=os.path.join(ROOT, "tracer", "src", "harness.py"))
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "humaneval",
                                                       "HumanEval.jsonl.gz"))
    parser.add_argument("--problems", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="also a cProfile table")
    parser.add_argument("--json", action="store_true", help="one JSON line instead of tables")
    a = parser.parse_args()
    if a.problems < 1 or a.rounds < 1:
        parser.error("--problems and --rounds must be >= 1")
    if not os.path.isfile(a.harness):
        parser.error("--harness %s: no such file" % a.harness)
    try:
        with gzip.open(a.data, "rt") as f:
            problems = [json.loads(line) for line in f if line.strip()][:a.problems]
    except OSError as exc:
        parser.error("--data %s: %s" % (a.data, exc))

    pair = Pair(a.harness)
    # The test side's per-test state is reset between problems as a reused test process
    # resets it (session_reset also puts back sys.modules, builtins and os.environ).
    pair.T.session_begin()
    per_round = []      # per round: list of per-call stage dicts, in order
    per_test = []
    one = []
    for r in range(a.rounds):
        pair.calls = []
        tests = []
        for p in problems:
            tests.append(pair.run_problem(p))
        per_round.append(pair.calls)
        per_test.append(tests)
        one.append([s for p in problems for s in one_process(pair.T, p)])
    n = len(per_round[0])
    if any(len(calls) != n for calls in per_round) or any(len(o) != n for o in one):
        sys.exit("the number of calls differs between rounds or paths: %s / %s"
                 % ([len(c) for c in per_round], [len(o) for o in one]))
    # Median over rounds of each call's stage, then the mean over calls.
    med = {s: [statistics.median(rd[i][s] for rd in per_round) for i in range(n)]
           for s in STAGES + ["call"]}
    one_med = [statistics.median(o[i] for o in one) for i in range(n)]
    us = lambda xs: 1e6 * sum(xs) / len(xs)
    total = [sum(med[s][i] for s in STAGES) for i in range(n)]
    by_shape = {}
    for i in range(n):
        key = per_round[0][i]["shape"]
        e = by_shape.setdefault(key, [0, 0.0, 0.0])
        e[0] += 1
        e[1] += total[i]
        e[2] += one_med[i]
    describe = statistics.median(sum(t["describe"] for t in ts) for ts in per_test) / len(problems)
    namespace = statistics.median(sum(t["namespace"] for t in ts) for ts in per_test) / len(problems)
    out = {
        "harness": os.path.relpath(a.harness), "problems": len(problems), "rounds": a.rounds,
        "calls": n, "calls_per_problem": n / len(problems),
        "us_per_call": {s: round(us(med[s]), 2) for s in STAGES},
        "us_per_call_two_processes": round(us(total), 2),
        "us_per_call_one_process": round(us(one_med), 2),
        "us_per_call_the_function": round(us(med["call"]), 2),
        "us_per_test_describe": round(1e6 * describe, 1),
        "us_per_test_namespace": round(1e6 * namespace, 1),
        "us_per_problem_extra": round(1e6 * ((sum(total) - sum(one_med)) / len(problems)
                                             + describe + namespace), 1),
    }
    if a.json:
        print(json.dumps(out))
    else:
        print("harness %s, %d HumanEval problems, %d calls (%.2f per problem), median of %d rounds"
              % (out["harness"], len(problems), n, n / len(problems), a.rounds))
        print("%-28s %10s" % ("stage (two processes)", "us/call"))
        for s in STAGES:
            print("%-28s %10.2f" % (s, out["us_per_call"][s]))
        print("%-28s %10.2f" % ("sum of the stages", out["us_per_call_two_processes"]))
        print("%-28s %10.2f" % ("one process (_plain_result)", out["us_per_call_one_process"]))
        print("%-28s %10.2f" % ("the function itself", out["us_per_call_the_function"]))
        print("per test: describe the namespace %.1f us, decode it %.1f us"
              % (out["us_per_test_describe"], out["us_per_test_namespace"]))
        print("two processes' Python work over one process's, per problem: %.1f us"
              % out["us_per_problem_extra"])
        print("\n%-44s %6s %12s %12s" % ("call shape (args -> result)", "calls", "2-proc us", "1-proc us"))
        for key, (count, two, onep) in sorted(by_shape.items(), key=lambda kv: -kv[1][1]):
            print("%-44s %6d %12.2f %12.2f" % (key[:44], count, 1e6 * two / count, 1e6 * onep / count))
    if a.profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
        for p in problems:
            pair.run_problem(p)
        prof.disable()
        stats = pstats.Stats(prof)
        stats.sort_stats("tottime").print_stats(r"harness\.py", 25)


if __name__ == "__main__":
    main()
