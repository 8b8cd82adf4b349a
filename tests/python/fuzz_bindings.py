"""Seeded fuzz of `import egca`'s public functions (run by test_hostile_args.py in a child
interpreter, so that a crash is a failed test naming the call rather than a dead pytest).

Every public callable of egca and egca._egca, the methods of a MurphyTree and of a loaded
ProblemSet, is called with generated arguments: wrong types, huge and negative integers,
non-finite floats, lone surrogates, invalid UTF-8 bytes, deeply nested JSON text, nested
lists, paths to missing and to hostile files. A call may return or raise any Exception;
anything else (a crash, an abort, SystemExit) fails. Before each call the call is written
to the log given on the command line, so the parent can name the last one.

Usage: fuzz_bindings.py SEED CALLS_PER_TARGET LOG DATA_DIR   (stdlib random only; bounded)
"""
from __future__ import annotations

import inspect
import json
import math
import os
import random
import re
import sys

import egca
from egca import _egca

# Functions that would act on the process or the machine rather than on their arguments.
SKIP = {"close_pools", "main"}


def hostile_files(data_dir: str) -> list[str]:
    """Files the path arguments may point at: deep nesting in every JSON shape egca reads."""
    deep = "[" * 200_000 + "]" * 200_000
    files = {
        "deep.json": deep,
        "deep_tests.json": '[{"kind": "call", "function": "f", "args": ' + deep + "}]",
        "deep.jsonl": '{"task_id": "x", "prompt": ' + deep + "}\n",
        "deep_apps.jsonl": json.dumps({"problem_id": 1, "question": "q", "solutions": "[]",
                                       "input_output": '{"inputs": ' + deep + "}"}) + "\n",
        "open.json": "[" * 300_000,
        "empty.jsonl": "",
        "binary.bin": "\udcff",
    }
    out = []
    for name, text in files.items():
        path = os.path.join(data_dir, name)
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
        out.append(path)
    return out + [os.path.join(data_dir, "missing.json"), data_dir, "/dev/null"]


class Gen:
    def __init__(self, rng: random.Random, paths: list[str]):
        self.rng = rng
        self.paths = paths

    def scalar(self):
        r = self.rng
        return r.choice([
            None, True, False, 0, 1, -1, 2, 7, 2**31 - 1, 2**31, 2**32, 2**62, 2**63 - 1, 2**63,
            -2**63, -2**63 - 1, 2**64, 10**30, -(10**30), 0.5, -0.0, 1e308, -1e308,
            math.inf, -math.inf, math.nan, "", "x", "HumanEval/0", "earliest", "mars", "np",
            "CORRECT", "LOGIC", "SYNTAX", "\ud800", "a\x00b", "é" * 3, b"", b"\xff\xfe",
            b"print(1)\n", "    return 1\n", "def f(x):\n    return x\n",
            "[" * 100_000, "{\"a\":" * 50_000, '[{"kind": "call"}]',
            r.randint(-10, 10), r.uniform(-1e6, 1e6),
            "".join(chr(r.randint(0, 0x2FFF)) for _ in range(r.randint(0, 40))),
            r.choice(self.paths), object(), (lambda: 1), egca,
        ])

    def named(self, name: str):
        """A value that fits the parameter's name half the time (so calls get past type
        checks and reach the code behind them), anything else otherwise."""
        r = self.rng
        if r.random() < 0.5:
            return self.value()
        n = name.lower()
        if n in ("candidate", "reference", "completion", "code", "source", "text", "prompt"):
            return r.choice(["def f(x):\n    return x\n", "print(input())\n", "    return 1\n",
                             "x = " + "[" * 5000 + "]" * 5000 + "\n", "\ud800", b"\xff"])
        if "path" in n or n in ("tests", "tests_file", "setup_file", "file"):
            return r.choice(self.paths)
        if "json" in n:
            return r.choice(["[" * 300_000, '[{"kind": "call", "function": "f", "args": ' +
                             "[" * 100_000 + "]" * 100_000 + "}]", "[]", "{}"])
        if n in ("max_len", "budget", "workers", "limit", "n", "seed", "parent", "sample_index",
                 "code_offset", "intra_last_turn", "turn"):
            return r.choice([-(2**63), -2, -1, 0, 1, 3, 2**31, 2**62, 2**63 - 1, r.randint(0, 5)])
        if n in ("reward", "advantage", "gamma", "eps", "alpha", "soft_weight", "max_reward",
                 "pad", "lambda_", "pass_fraction"):
            return r.choice([0.0, 1.0, -1.0, 0.5, math.nan, math.inf, -math.inf, 1e308, 2.0])
        if n in ("rewards", "advantages", "intermediate", "outcome", "scores", "credited"):
            return [r.choice([0.0, 1.0, math.nan, 1e308, -1.0]) for _ in range(r.randint(0, 6))]
        if "offsets" in n or n == "token_bytes":
            return [[r.randint(-2, 10), r.randint(-2, 2**33)] for _ in range(r.randint(0, 4))]
        return self.value()

    def value(self, depth: int = 0):
        r = self.rng
        k = r.random()
        if depth >= 4 or k < 0.55:
            return self.scalar()
        if k < 0.75:
            return [self.value(depth + 1) for _ in range(r.randint(0, 4))]
        if k < 0.85:
            return tuple(self.value(depth + 1) for _ in range(r.randint(0, 3)))
        if k < 0.95:
            return {str(self.scalar()): self.value(depth + 1) for _ in range(r.randint(0, 3))}
        nested = []
        for _ in range(r.randint(1, 60)):
            nested = [nested]
        return nested


def param_names(fn) -> list[str]:
    try:
        return [p for p in inspect.signature(fn).parameters if p not in ("self", "args", "kwargs")]
    except (TypeError, ValueError):
        pass
    doc = (getattr(fn, "__doc__", None) or "").splitlines()
    names: list[str] = []
    for line in doc[:3]:  # pybind11: "name(self: T, a: int, b: str = 'x') -> R"
        m = re.match(r"\s*(?:\d+\.\s*)?\w+\((.*)\)", line)
        if m:
            names += [n for n in re.findall(r"(\w+):", m.group(1)) if n != "self"]
    return list(dict.fromkeys(names))


def targets(data_dir: str):
    out = []
    for mod in (egca, _egca):
        for name in sorted(dir(mod)):
            obj = getattr(mod, name)
            if name.startswith("_") or name in SKIP or not callable(obj):
                continue
            if inspect.ismodule(obj) or not str(getattr(obj, "__module__", "")).startswith("egca"):
                continue  # imported names (json, np, typing): not egca's API
            out.append((f"{mod.__name__}.{name}", obj))
    tree = egca.MurphyTree()
    a = tree.add_response(-1, 1.0)
    tree.add_response(-1, 0.0)
    tree.add_response(a, 0.5)
    parent = a
    for _ in range(100_000):  # a long chain: every method walks it
        parent = tree.add_response(parent, 0.0)
    for name in sorted(dir(tree)):
        if not name.startswith("_"):
            attr = getattr(tree, name)
            if callable(attr):
                out.append((f"MurphyTree.{name}", attr))
    return out


def main() -> int:
    seed, calls, log_path, data_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    os.makedirs(data_dir, exist_ok=True)
    rng = random.Random(seed)
    gen = Gen(rng, hostile_files(data_dir))
    os.chdir(data_dir)  # anything a call writes stays in the test's directory
    log = open(log_path, "w", buffering=1)
    done = 0
    for label, fn in targets(data_dir):
        names = param_names(fn)
        for _ in range(calls):
            nargs = rng.randint(0, min(5, len(names) + 1))
            args = [gen.named(names[i]) if i < len(names) else gen.value() for i in range(nargs)]
            kwargs = {}
            for name in names[nargs:]:
                if rng.random() < 0.4:
                    kwargs[name] = gen.named(name)
            log.write(f"{label} args={ascii(args)[:300]} kwargs={ascii(kwargs)[:300]}\n")
            try:
                fn(*args, **kwargs)
            except Exception:
                pass
            done += 1
    log.write(f"DONE {done}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
