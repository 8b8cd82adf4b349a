"""Hostile arguments to `import egca` (issue 38, class 6): each raises a Python exception
with a clear message, or is handled; none takes the interpreter down. Honest controls sit
beside each hostile case. The last test fuzzes every public function (fuzz_bindings.py) in a
child interpreter, seeded and bounded."""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import egca
from conftest import HE0_CORRECT, HE0_LOGIC

HERE = pathlib.Path(__file__).resolve().parent
DEEP = 200_000  # levels: far past any stack a recursive walk could use


def deep_json(levels: int = DEEP) -> str:
    return "[" * levels + "]" * levels


# ---------------------------------------------------------------- MurphyTree on a long chain

def chain(n: int) -> egca.MurphyTree:
    t = egca.MurphyTree()
    parent = -1
    for i in range(n):
        parent = t.add_response(parent, 1.0 if i == n - 1 else 0.0)
    return t


def test_murphy_dump_of_a_long_chain():
    t = chain(DEEP)
    text = t.dump()
    lines = text.splitlines()
    # header, then per node: its group's line and its own line (the last node has no group)
    assert len(lines) == 1 + 2 * DEEP
    assert lines[-1].lstrip().startswith(f"n{DEEP - 1} t{DEEP} r=1.0000 solved")
    assert max(len(line) for line in lines) < 300  # indentation stops growing
    # honest control: a small tree's dump keeps its indentation by depth
    small = chain(3).dump().splitlines()
    assert small[1] == "group prompt: retained 1/1"
    assert small[2] == "  n0 t1 r=0.0000 failed"
    assert small[3] == "    group of n0: retained 1/1"
    assert small[4] == "      n1 t2 r=0.0000 failed"


def test_murphy_trajectories_of_a_long_chain():
    paths = chain(DEEP).grpo_mt_trajectories(eps=0.0)
    assert len(paths) == 1 and list(paths[0]["path"]) == list(range(DEEP))
    # honest control: two leaves under one root, in child order
    t = egca.MurphyTree()
    root = t.add_response(-1, 0.0)
    t.add_response(root, 1.0)
    t.add_response(root, 0.0)
    assert [list(p["path"]) for p in t.grpo_mt_trajectories(eps=0.0)] == [[0, 1], [0, 2]]


# ---------------------------------------------------------------- deeply nested test files

def test_trace_refuses_deeply_nested_tests(tmp_path, routing):
    path = tmp_path / "tests.json"
    path.write_text('[{"kind": "call", "function": "f", "args": ' + deep_json() + "}]")
    with pytest.raises(Exception, match="nested deeper than 256 levels"):
        egca.trace("def f(x):\n    return 1\n", "def f(x):\n    return 1\n", path)
    # honest control: 200 levels of nesting are data like any other
    args = "[" + "[" * 200 + "1" + "]" * 200 + "]"
    path.write_text('[{"kind": "call", "function": "f", "args": ' + args +
                    ', "expected": 1}]')
    out = egca.trace("def f(x):\n    return 1\n", "def f(x):\n    return 1\n", path)
    assert out["mode"] == "CORRECT", out["reason"]


def test_load_problems_reports_deeply_nested_records(tmp_path):
    path = tmp_path / "problems.jsonl"
    good = {"task_id": "ok/0", "prompt": "def f(x):\n", "entry_point": "f",
            "canonical_solution": "    return x\n",
            "test": "def check(candidate):\n    assert candidate(1) == 1\n"}
    path.write_text(json.dumps(good) + "\n" +
                    '{"task_id": "deep/0", "prompt": ' + deep_json() + "}\n")
    problems = egca.load_problems(path, "humaneval")
    assert problems.ids() == ["ok/0"]
    assert any("nested deeper than 256" in b for b in problems.bad_records), problems.bad_records


def test_load_problems_apps_with_deeply_nested_input_output(tmp_path):
    path = tmp_path / "apps.jsonl"
    record = {"problem_id": 7, "question": "print the input", "difficulty": "introductory",
              "solutions": json.dumps(["print(input())"]),
              "input_output": '{"inputs": ' + deep_json() + ', "outputs": []}'}
    path.write_text(json.dumps(record) + "\n")
    problems = egca.load_problems(path, "codeparrot_apps")  # must not crash
    assert len(problems) == 0 and problems.bad_records


# ---------------------------------------------------------------- token_advantages sizes

@pytest.fixture(scope="module")
def routes(humaneval, routing):
    router = egca.Router(humaneval, "HumanEval/0")
    return [router.route(HE0_LOGIC, completion_is_body=True),
            router.route(HE0_CORRECT, completion_is_body=True)]


def test_token_advantages_huge_max_len(routes):
    offs = [np.array([[0, 4], [4, 8]]), np.array([[0, 4]])]
    for max_len in (2**62, 2**63 - 1, 2**40):
        with pytest.raises(ValueError, match="max_len"):
            egca.token_advantages(routes, [1.0, -1.0], token_offsets=offs, max_len=max_len)
    # 4 x 2^62 cells wraps to 0 in 64 bits: the packing wrote past an empty buffer
    with pytest.raises(ValueError, match="max_len"):
        egca.token_advantages(routes * 2, [1.0, -1.0] * 2, token_offsets=offs * 2, max_len=2**62)
    with pytest.raises(ValueError, match="max_len"):
        egca.token_advantages(routes, [1.0, -1.0], token_offsets=offs, max_len=-5)
    with pytest.raises((TypeError, OverflowError)):
        egca.token_advantages(routes, [1.0, -1.0], token_offsets=offs, max_len=2**64)
    # honest control: a real max_len pads
    t = egca.token_advantages(routes, [1.0, -1.0], token_offsets=offs, max_len=5, pad=-3)
    assert t.advantages.shape == (2, 5) and t.advantages[1, 4] == -3


# ---------------------------------------------------------------- fuzz

def test_fuzz_public_functions(tmp_path, humaneval):
    """Every public function with generated arguments (fuzz_bindings.py): the child exits
    0 after every call returned or raised. Bounded: 12 calls per function, one seed."""
    log = tmp_path / "calls.log"
    data = tmp_path / "data"
    data.mkdir()
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, str(HERE / "fuzz_bindings.py"), "38", "12", str(log),
                           str(data)], env=env, capture_output=True, text=True, timeout=600)
    calls = log.read_text().splitlines() if log.exists() else []
    assert proc.returncode == 0, (
        f"the interpreter died (status {proc.returncode}) on: "
        f"{calls[-1] if calls else '(no call logged)'}\n{proc.stderr[-2000:]}")
    assert calls and calls[-1].startswith("DONE "), calls[-3:]
    assert int(calls[-1].split()[1]) > 200  # it did call things
