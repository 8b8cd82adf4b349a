#!/usr/bin/python3
"""Unit tests of study.py: the learning-rate rules (PREREGISTRATION.md, amendment 4) and the
localization scoring, values by hand.

    test_study_unit.py      (ctest learns_study_unit)
"""
import importlib.util
import json
import math
import os
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("study", os.path.join(HERE, "study.py"))
study = importlib.util.module_from_spec(spec)
spec.loader.exec_module(study)


def close(a, b, tol=1e-12):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def test_matched_lr():
    # KL ~ lr^2: an arm with 4x uniform's KL at 3e-4 matches at 3e-4 / 2 = 1.5e-4.
    assert close(study.matched_lr(3e-4, 0.01, 0.04), 1.5e-4)
    # 9x smaller KL: 3x larger rate.
    assert close(study.matched_lr(1e-3, 9e-4, 1e-4), 3e-3)
    assert close(study.matched_lr(2e-4, 0.5, 0.5), 2e-4)


def test_secant_keeps_a_rate_within_tolerance():
    # Phase 2's KL 1.2x the target: inside 1.25x, phase 2's rate is kept.
    lr, how = study.secant_lr(3e-4, 0.04, 1.5e-4, 0.012, 0.01)
    assert lr == 1.5e-4 and how.startswith("matched"), (lr, how)
    lr, how = study.secant_lr(3e-4, 0.04, 1.5e-4, 0.01 / 1.25, 0.01)  # the edge counts as inside
    assert lr == 1.5e-4, how


def test_secant_step_in_log_log():
    # Points (1e-4, 0.001) and (2e-4, 0.002): slope log(2)/log(2) = 1 (KL linear in lr).
    # Target 0.004: lr = 2e-4 * (0.004 / 0.002)^(1/1) = 4e-4.
    lr, how = study.secant_lr(1e-4, 0.001, 2e-4, 0.002, 0.004)
    assert close(lr, 4e-4) and "slope 1.00" in how, (lr, how)
    # Slope 2 (the lr^2 law holds): points (1e-4, 1e-6), (3e-4, 9e-6); target 4e-6 -> 2e-4.
    lr, _ = study.secant_lr(1e-4, 1e-6, 3e-4, 9e-6, 4e-6)
    assert close(lr, 2e-4, 1e-9), lr


def test_secant_is_bounded_and_falls_back():
    # Slope 0.5 and a target 100x phase 2's KL: the secant's 1e4x is cut to 4x phase 2's rate.
    lr, _ = study.secant_lr(1e-4, 0.01, 4e-4, 0.02, 2.0)
    assert close(lr, 1.6e-3), lr
    # No slope (same KL at both rates): the lr^2 law from phase 2: 2e-4 * sqrt(0.01 / 0.04) = 1e-4.
    lr, how = study.secant_lr(1e-4, 0.04, 2e-4, 0.04, 0.01)
    assert close(lr, 1e-4) and "no usable slope" in how, (lr, how)


def test_no_kl_keeps_the_reference_rate():
    # No step moved the policy (KL 0): nothing to match, the reference rate stays.
    assert study.matched_lr(3e-4, 0.0, 0.02) == 3e-4
    assert study.matched_lr(3e-4, 0.02, 0.0) == 3e-4
    lr, how = study.secant_lr(3e-4, 0.0, 3e-4, 0.0, 0.01)
    assert lr == 3e-4 and how.startswith("no KL"), (lr, how)


def test_localization_by_hand():
    with tempfile.TemporaryDirectory() as tmp:
        nm = os.path.join(tmp, "near_misses.jsonl")
        with open(nm, "w") as f:
            f.write(json.dumps({"problem_id": "p1", "program": "a\nb\nc", "bug_kind": "bound", "bug_line": 2}) + "\n")
            f.write(json.dumps({"problem_id": "p2", "program": "x\ny", "bug_kind": "init", "bug_line": 1}) + "\n")
        run = os.path.join(tmp, "run")
        assert study.localization(run, nm) is None  # no dump
        os.makedirs(os.path.join(run, "rollouts"))
        span = lambda a, b: {"line": a, "end_line": b}
        rows = [
            # matched p1 (trailing newline ignored): earliest covers line 2, last does not, no random span
            {"problem_id": "p1", "program": "a\nb\nc\n", "mode": "LOGIC",
             "spans": {"earliest": span(2, 2), "last": span(3, 3), "random": None}},
            # matched p2: earliest misses line 1, random covers it (1..2)
            {"problem_id": "p2", "program": "x\ny", "mode": "LOGIC",
             "spans": {"earliest": span(2, 2), "last": span(2, 2), "random": span(1, 2)}},
            # LOGIC but not catalogued (another problem's program): counted, not scored
            {"problem_id": "p2", "program": "a\nb\nc", "mode": "LOGIC", "spans": {}},
            # not LOGIC: ignored
            {"problem_id": "p1", "program": "a\nb\nc", "mode": "CORRECT", "spans": {}},
        ]
        with open(os.path.join(run, "rollouts", "step-1.jsonl"), "w") as f:
            for r in rows[:2]:
                f.write(json.dumps(r) + "\n")
        with open(os.path.join(run, "rollouts", "step-2.jsonl"), "w") as f:
            for r in rows[2:]:
                f.write(json.dumps(r) + "\n")
        loc = study.localization(run, nm)
        assert loc["logic"] == 3 and loc["matched"] == 2, loc
        assert loc["hits"] == {"earliest": 1, "last": 0, "random": 1}, loc
        assert loc["missing"] == {"earliest": 0, "last": 0, "random": 1}, loc
        assert loc["by_kind"] == {"bound": [1, 1], "init": [0, 1]}, loc


def test_pass_at_1():
    # Per-problem c / n, averaged over problems with samples: (1/4 + 4/4) / 2; the n = 0 one ignored.
    assert close(study.pass_at_1({"a": [1, 4], "b": [4, 4], "c": [0, 0]}), 0.625)
    assert math.isclose(study.pass_at_1({}), 0.0)


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            fn()
            print("ok", name)
