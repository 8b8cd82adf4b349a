"""Routing from Python: Router, route_batch, trace, Route objects, token credit of routes."""
import json
import os
import subprocess

import numpy as np
import pytest

import egca
from conftest import BINARY_DIR, HE0_CORRECT, HE0_LOGIC, HE0_SYNTAX

pytestmark = pytest.mark.usefixtures("routing")


@pytest.fixture(scope="module")
def router(humaneval):
    return egca.Router(humaneval, "HumanEval/0")


def test_router_modes(router):
    assert router.reference_kind == "given" and router.problem_id == "HumanEval/0"
    ok = router.route(HE0_CORRECT, completion_is_body=True)
    assert ok.mode == "CORRECT" and ok.r_hat == 1.0 and ok.reward == 1.0 and ok.passes
    assert ok.i_c and ok.i_cmp is True and ok.spans["earliest"] is None
    logic = router.route(HE0_LOGIC, completion_is_body=True)
    assert logic.mode == "LOGIC" and logic.r_hat < 1.0 and not logic.passes
    span = logic.spans["earliest"]
    assert span is not None and span["completion"] is not None
    # the span's completion bytes hold the changed comparison's block
    c = span["completion"]
    assert "distance > threshold" in HE0_LOGIC[c["begin_byte"]:c["end_byte"]]
    assert logic.divergence["earliest"]["kind"]
    assert logic.divergence["steps"] and "state" in (logic.divergence["steps"][0]["candidate"] or {"state": 1})
    assert logic.verdicts[0]["verdict"] != "OK" and logic.first_failing_test == 0
    syn = router.route(HE0_SYNTAX, completion_is_body=True)
    assert syn.mode == "SYNTAX" and syn.reward == 0.0 and "SyntaxError" in syn.error_message
    assert syn.spans["error"]["completion"] is not None


def test_route_json(router):
    r = router.route(HE0_LOGIC, completion_is_body=True)
    doc = json.loads(r.to_json())
    assert doc["record"]["mode"] == "LOGIC" and doc["route"]["mode"] == "LOGIC"
    assert doc["record"]["problem"] == "HumanEval/0"
    assert json.loads(r.record_json()) == doc["record"]
    assert doc["route"]["earliest_divergence"]["begin_byte"] == r.spans["earliest"]["program"]["begin_byte"]


def test_route_bad_input(router, humaneval):
    with pytest.raises(ValueError, match="not valid UTF-8"):
        router.route(b"    return \xff\n")
    with pytest.raises(ValueError, match="lone surrogate"):
        router.route("    return '\udcff'\n")
    with pytest.raises(TypeError, match="must be str or bytes"):
        router.route(None)
    with pytest.raises(KeyError, match="did you mean"):
        egca.Router(humaneval, "HumanEval/0x")
    with pytest.raises(ValueError, match="timeout"):
        egca.Router(humaneval, "HumanEval/0", timeout=0)
    with pytest.raises(ValueError, match="constraints"):
        egca.Router(humaneval, "HumanEval/0", constraints="all")
    with pytest.raises(TypeError):
        egca.Router("HumanEval.jsonl", "HumanEval/0")


def test_route_batch_matches_router(router, humaneval):
    completions = [HE0_CORRECT, HE0_LOGIC, HE0_SYNTAX, HE0_LOGIC]
    routes = egca.route_batch(humaneval, ["HumanEval/0"] * 4, completions, workers=2,
                              completion_is_body=True)
    assert [r.mode for r in routes] == ["CORRECT", "LOGIC", "SYNTAX", "LOGIC"]
    one = router.route(HE0_LOGIC, completion_is_body=True)
    assert routes[1].spans == one.spans and routes[3].spans == one.spans
    assert json.loads(routes[1].record_json())["earliest"] == json.loads(one.record_json())["earliest"]
    assert egca.mode_fractions(routes) == {"SYNTAX": 0.25, "CONSTRAINT": 0.0, "LOGIC": 0.5,
                                           "CORRECT": 0.25}


def test_route_batch_bad_input(humaneval):
    with pytest.raises(KeyError, match='did you mean "HumanEval/1"'):
        egca.route_batch(humaneval, ["HumanEval/0", "humaneval/1"], ["x", "y"])
    with pytest.raises(ValueError, match=r"completions\[1\].*not valid UTF-8"):
        egca.route_batch(humaneval, ["HumanEval/0"] * 2, ["x", b"\xc3("])
    with pytest.raises(ValueError, match="differ in length"):
        egca.route_batch(humaneval, ["HumanEval/0"], ["x", "y"])
    with pytest.raises(TypeError, match="problem_ids\\[0\\] must be str"):
        egca.route_batch(humaneval, [0], ["x"])
    with pytest.raises(TypeError, match="sequences"):
        egca.route_batch(humaneval, "HumanEval/0", "x")
    with pytest.raises(TypeError, match="ProblemSet"):
        egca.route_batch({"HumanEval/0": 1}, ["HumanEval/0"], ["x"])
    with pytest.raises(ValueError, match="workers"):
        egca.route_batch(humaneval, ["HumanEval/0"], ["x"], workers=-1)
    assert egca.route_batch(humaneval, [], []) == []


def test_token_credit_of_routes(router):
    logic = router.route(HE0_LOGIC, completion_is_body=True)
    ok = router.route(HE0_CORRECT, completion_is_body=True)
    # one token per line of the completion (byte offsets)
    def lines(text):
        out, at = [], 0
        for line in text.splitlines(keepends=True):
            out.append((at, at + len(line.encode())))
            at += len(line.encode())
        return np.array(out)
    offs = [lines(HE0_LOGIC), lines(HE0_CORRECT)]
    credit = egca.token_advantages([logic, ok], [-1.0, 0.8], token_offsets=offs)
    a = credit.advantages
    assert a.dtype == np.float32 and a.shape == (2, 8)
    assert credit.placement == ["localized", "uniform"]
    np.testing.assert_allclose(a.sum(axis=1), [-1.0, 0.8], rtol=1e-6)
    np.testing.assert_allclose(a[1], np.full(8, 0.1), rtol=1e-6)
    # the localized tokens are the lines the span covers, nothing else
    span = logic.spans["earliest"]["completion"]
    touched = [(b < span["end_byte"] and span["begin_byte"] < e) for b, e in offs[0]]
    assert np.all((a[0] != 0) == np.array(touched))
    # the same as AssignTokenCredit called directly on the record's completion span
    direct = egca.assign_token_credit("LOGIC", -1.0, offs[0],
                                      earliest=(span["begin_byte"], span["end_byte"]))
    np.testing.assert_allclose(a[0], direct["advantages"], rtol=1e-6)
    np.testing.assert_allclose(credit.mask[0], direct["advantages"] / -1.0, rtol=1e-6)
    # torch output, padding to max_len, uniform target
    import torch
    t = egca.token_advantages([logic], [1.0], token_offsets=offs[:1], max_len=10, pad=-7,
                              target="uniform", return_tensors="pt")
    assert isinstance(t.advantages, torch.Tensor) and t.advantages.shape == (1, 10)
    assert t.advantages[0, 9].item() == -7 and abs(t.advantages[0, 0].item() - 1 / 8) < 1e-6


# A NameError: the body binds `dist` and uses `distance` (issue 37's `syntax: cause`).
HE0_NAME_ERROR = HE0_CORRECT.replace("distance = abs", "dist = abs")


def test_token_credit_sign_aware_options_of_routes(router):
    def lines(text):
        out, at = [], 0
        for line in text.splitlines(keepends=True):
            out.append((at, at + len(line.encode())))
            at += len(line.encode())
        return np.array(out)
    named = router.route(HE0_NAME_ERROR, completion_is_body=True)
    assert named.mode == "SYNTAX"
    assert (named.error_type, named.error_name) == ("NameError", "distance")
    err, cause = named.spans["error"]["completion"], named.spans["cause"]["completion"]
    # `distance` is bound nowhere: the cause runs from the function's header (in the prompt,
    # so clipped to the completion's first byte) to the use on line 5.
    assert cause["begin_byte"] == 0 and cause["end_byte"] == err["end_byte"]
    offs = [lines(HE0_NAME_ERROR)]  # one token per line: 8 tokens
    span = egca.token_advantages([named], [-1.0], token_offsets=offs)
    np.testing.assert_allclose(span.advantages[0], [0, 0, 0, 0, -1, 0, 0, 0], atol=1e-7)
    c = egca.token_advantages([named], [-1.0], token_offsets=offs, syntax="cause")
    np.testing.assert_allclose(c.advantages[0], [-0.2] * 5 + [0] * 3, atol=1e-7)
    np.testing.assert_allclose(c.mask[0], [0.2] * 5 + [0] * 3, atol=1e-7)
    # A positive LOGIC advantage under prefix: the tokens before the divergent line, and the
    # mask (a_{i,t} / A_i) follows the sign rule, not the negative advantage's.
    logic = router.route(HE0_LOGIC, completion_is_body=True)
    offs = [lines(HE0_LOGIC)] * 2
    t = egca.token_advantages([logic, logic], [0.8, -0.8], token_offsets=offs,
                              positive_logic="prefix")
    first = int(t.span_token_begin[0])
    assert first == 4  # `if distance > threshold:` is line 5
    np.testing.assert_allclose(t.advantages[0], [0.2] * 4 + [0] * 4, atol=1e-7)
    np.testing.assert_allclose(t.advantages[1], [0] * 4 + [-0.8] + [0] * 3, atol=1e-7)
    np.testing.assert_allclose(t.mask[0], [0.25] * 4 + [0] * 4, atol=1e-7)
    np.testing.assert_allclose(t.mask[1], [0] * 4 + [1] + [0] * 3, atol=1e-7)
    with pytest.raises(ValueError, match="positive_logic"):
        egca.token_advantages([logic], [1.0], token_offsets=offs[:1], positive_logic="half")
    with pytest.raises(ValueError, match="syntax"):
        egca.token_advantages([logic], [1.0], token_offsets=offs[:1], syntax="raise")


def test_token_credit_min_confidence(router):
    # Issue 36: a LOGIC route whose localization confidence is below min_confidence gets
    # uniform credit; 8 one-line tokens, A = -0.8: -0.1 on each.
    logic = router.route(HE0_LOGIC, completion_is_body=True)
    conf = logic.localization_confidence
    assert conf is not None and 0 < conf <= 1
    at, offs = 0, []
    for line in HE0_LOGIC.splitlines(keepends=True):
        offs.append((at, at + len(line.encode())))
        at += len(line.encode())
    offs = [np.array(offs)]
    low = egca.token_advantages([logic], [-0.8], token_offsets=offs, min_confidence=min(1.0, conf + 0.01))
    assert low.placement == ["fallback"] and low.fallback == ["low_confidence"]
    np.testing.assert_allclose(low.advantages[0], [-0.1] * 8, atol=1e-7)
    assert "fallback.low_confidence 1" in low.stats
    ok = egca.token_advantages([logic], [-0.8], token_offsets=offs, min_confidence=conf)
    assert ok.placement == ["localized"]
    direct = egca.assign_token_credit("LOGIC", -1.0, offs[0], earliest=(0, 1),
                                      localization_confidence=0.2, min_confidence=0.3)
    assert direct["fallback"] == "low_confidence"
    with pytest.raises(ValueError, match="min_confidence"):
        egca.token_advantages([logic], [1.0], token_offsets=offs, min_confidence=1.5)


def test_token_credit_bad_input(router):
    r = router.route(HE0_CORRECT, completion_is_body=True)
    with pytest.raises(TypeError, match="exactly one"):
        egca.token_advantages([r], [1.0])
    with pytest.raises(ValueError, match="shape"):
        egca.token_advantages([r], [1.0, 2.0], token_offsets=[[[0, 1]]])
    with pytest.raises(ValueError, match="finite"):
        egca.token_advantages([r], [float("nan")], token_offsets=[[[0, 1]]])
    with pytest.raises(TypeError, match="egca.Route"):
        egca.token_advantages(["route"], [1.0], token_offsets=[[[0, 1]]])
    with pytest.raises(ValueError, match="outside the completion"):
        egca.token_advantages([r], [1.0], token_offsets=[[[0, 10**6]]], char_offsets=True)
    with pytest.raises(ValueError, match="return_tensors"):
        egca.token_advantages([r], [1.0], token_offsets=[[[0, 1]]], return_tensors="tf")


def test_char_offsets_map_to_bytes(router):
    # "é" is two bytes: character offsets must become byte offsets before spans are matched
    body = HE0_LOGIC.replace("enumerate(numbers):\n", "enumerate(numbers):  # é\n", 1)
    r = router.route(body, completion_is_body=True)
    assert r.mode == "LOGIC"
    chars = np.array([[i, i + 1] for i in range(len(body))])
    by_char = egca.token_advantages([r], [1.0], token_offsets=[chars], char_offsets=True)
    span = r.spans["earliest"]["completion"]
    raw = body.encode()
    starts = [len(body[:i].encode()) for i in range(len(body) + 1)]
    touched = [starts[i] < span["end_byte"] and span["begin_byte"] < starts[i + 1]
               for i in range(len(body))]
    assert np.all((by_char.advantages[0] != 0) == np.array(touched))
    assert raw[span["begin_byte"]:span["end_byte"]].decode().strip().startswith(("if", "distance"))


EGCA_TRACE = BINARY_DIR / "tools" / "egca-trace" / "egca-trace"


def _drop_timing(doc):
    doc.pop("grade_seconds", None)
    doc.pop("localize_seconds", None)
    return doc


def test_trace_equals_egca_trace_json(tmp_path):
    if not EGCA_TRACE.exists():
        pytest.skip(f"{EGCA_TRACE} not built")
    cand = "def f(xs):\n    s = 0\n    for x in xs:\n        s += x * x\n    return s\n"
    ref = "def f(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n"
    (tmp_path / "c.py").write_text(cand)
    (tmp_path / "r.py").write_text(ref)
    cli = subprocess.run([str(EGCA_TRACE), "c.py", "r.py", "--fn", "f", "--input", "[[1, 2, 3]]",
                          "--input", "[[]]", "--json"], cwd=tmp_path, capture_output=True,
                         text=True, check=True)
    got = egca.trace(cand, ref, fn="f", inputs=["[[1, 2, 3]]", "[[]]"])
    want = json.loads(cli.stdout)
    assert got["mode"] == "LOGIC"
    assert _drop_timing(got) == _drop_timing(want)
    tests = [{"kind": "call", "function": "f", "args": [[1, 2, 3]], "expected": 6}]
    assert egca.trace(cand, ref, tests)["mode"] == "LOGIC"
    assert egca.trace(ref, ref, tests)["mode"] == "CORRECT"


def test_trace_bad_input(tmp_path):
    ref = "def f(x):\n    return x\n"
    with pytest.raises(ValueError, match="reference: the program is empty"):
        egca.trace(ref, "  \n", fn="f", inputs=["[1]"])
    with pytest.raises(ValueError, match="fails its own test"):
        egca.trace(ref, "def f(x):\n    return 1 / 0\n", fn="f", inputs=["[1]"])
    with pytest.raises(ValueError, match="reference"):
        egca.trace(ref, "def f(:\n", fn="f", inputs=["[1]"])
    with pytest.raises(FileNotFoundError):
        egca.trace(ref, ref, tmp_path / "missing_tests.py")
    with pytest.raises(ValueError, match="--input"):
        egca.trace(ref, ref, fn="f", inputs=["not json"])
    with pytest.raises(TypeError, match="tests must be"):
        egca.trace(ref, ref, 42)
    with pytest.raises(ValueError, match="not valid UTF-8"):
        egca.trace(b"\xff", ref, fn="f", inputs=["[1]"])


def test_route_batch_ctrl_c(humaneval):
    # SIGINT while the batch runs: the workers stop after the program in hand and the call
    # raises KeyboardInterrupt (no crash, no hang)
    import signal
    import threading
    import time

    ids = [f"HumanEval/{i}" for i in range(164)] * 3
    bodies = ["    return None\n" + "    " * 0 + f"# {i}\n" for i in range(len(ids))]
    threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    t0 = time.time()
    with pytest.raises(KeyboardInterrupt):
        egca.route_batch(humaneval, ids, bodies, workers=2, completion_is_body=True)
    assert time.time() - t0 < 120  # a hang detector (stopping takes the programs in hand)
