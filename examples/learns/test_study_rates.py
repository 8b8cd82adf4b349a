#!/usr/bin/python3
"""Unit tests of study.py's learning-rate rules (PREREGISTRATION.md, amendment 4), values by hand.

    test_study_rates.py      (ctest learns_study_rates_unit)
"""
import importlib.util
import math
import os

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


def test_pass_at_1():
    # Per-problem c / n, averaged over problems with samples: (1/4 + 4/4) / 2; the n = 0 one ignored.
    assert close(study.pass_at_1({"a": [1, 4], "b": [4, 4], "c": [0, 0]}), 0.625)
    assert math.isclose(study.pass_at_1({}), 0.0)


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            fn()
            print("ok", name)
