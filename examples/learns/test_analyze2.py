#!/usr/bin/python3
"""Tests of analyze2.py (the confirmatory study's registered analysis): the one-sided and
non-inferiority t-tests against an independent numerical integration of Student's t density,
the exact one-sided sign-flip test and the verdict words by hand, the two-level bootstrap's
limits, and one synthetic study end to end.

    test_analyze2.py      (ctest learns_analyze2_unit)
"""
import json
import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import analyze2  # noqa: E402


def t_sf_by_integration(t, df, steps=200000):
    """P(T > t) by Simpson's rule on the t density (math.gamma), from t to t + 200."""
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
    f = lambda x: c * (1 + x * x / df) ** (-(df + 1) / 2)  # noqa: E731
    a, b = t, t + 200.0
    h = (b - a) / steps
    s = f(a) + f(b) + sum((4 if i % 2 else 2) * f(a + i * h) for i in range(1, steps))
    return s * h / 3


def close(a, b, tol):
    return abs(a - b) <= tol


def test_one_sided_t():
    d = [0.01, 0.03, 0.02, 0.00, 0.04]
    # mean 0.02, SD sqrt(0.001 / 4) = 0.0158114, SE 0.00707107: t = 2.828427 (df 4).
    assert close(analyze2.one_sided_t_p(d, 0.0), t_sf_by_integration(2.828427, 4), 1e-6)
    # Non-inferiority at 1 point: t = (0.02 + 0.01) / 0.00707107 = 4.242641.
    assert close(analyze2.one_sided_t_p(d, 0.01), t_sf_by_integration(4.242641, 4), 1e-6)
    # A negative mean: d mirrored, t = -2.828427, p = 1 - P(T > 2.83).
    assert close(analyze2.one_sided_t_p([-x for x in d], 0.0), 1 - t_sf_by_integration(2.828427, 4), 1e-6)


def test_sign_flip_one_sided():
    d = [0.01, 0.03, 0.02, 0.00, 0.04]
    # Every difference >= 0: only the all-plus pattern and the one that flips the 0 reach
    # the observed mean: 2 of 32.
    assert close(analyze2.sign_flip_one_sided_p(d, 0.0), 2 / 32, 1e-12)
    # d = [0.02, -0.01]: patterns' means (+0.02 -0.01)/2 = 0.005 (observed), (+,+) 0.015,
    # (-,-) -0.005, (-,+) -0.015: 2 of 4 at least the observed.
    assert close(analyze2.sign_flip_one_sided_p([0.02, -0.01], 0.0), 0.5, 1e-12)
    # With margin 0.01: x = [0.03, 0.0]: (+,*) both 0.015 >= 0.015; (-,*) -0.015: 2 of 4.
    assert close(analyze2.sign_flip_one_sided_p([0.02, -0.01], 0.01), 0.5, 1e-12)


def test_two_level_bootstrap_limits():
    # Every per-problem difference the same constant: the interval is that constant.
    lo, hi = analyze2.two_level_bootstrap([[0.02] * 5, [0.02] * 7, [0.02] * 3], 500, 0)
    assert close(lo, 0.02, 1e-12) and close(hi, 0.02, 1e-12)
    # Seeds at 0 and 0.1 with no spread inside: the interval lies in [0, 0.1] and is wide.
    lo, hi = analyze2.two_level_bootstrap([[0.0] * 4, [0.1] * 4], 2000, 0)
    assert lo == 0.0 and hi == 0.1, (lo, hi)


def contrast(d, mdd=0.02):
    n = len(d)
    m = sum(d) / n
    return dict(seeds=list(range(1, n + 1)), mean=m, t_ci=(m - 0.01, m + 0.01), mdd_80=mdd)


def test_verdicts():
    h1, h2 = analyze2.HYPOTHESES[0], analyze2.HYPOTHESES[1]
    c = contrast([0.0] * 10)
    assert analyze2.verdict(h1, c, 0.01) == "not inferior (margin 1 point)"
    assert analyze2.verdict(h1, c, 0.03).startswith("non-inferiority not shown")
    c = dict(contrast([0.0] * 10), t_ci=(-0.05, -0.02))
    assert analyze2.verdict(h1, c, 0.9).startswith("hurts")
    assert analyze2.verdict(h2, dict(contrast([0.0] * 10), t_ci=(-0.05, -0.001)), 0.9) == "hurts"
    assert analyze2.verdict(h2, contrast([0.01] * 10), 0.02) == "helps"
    assert analyze2.verdict(h2, contrast([0.01] * 10, mdd=0.034), 0.2) == \
        "no difference this design can detect (MDD 3.4 points)"
    assert analyze2.verdict(h2, contrast([0.01] * 9), 0.001).startswith("no verdict yet (9 of 10")
    assert analyze2.verdict(h2, None, 1.0).startswith("no verdict yet (0 of 10")


def write_run(d, variant, arm, seed, rates, step=100, sha="a"):
    problems = {str(j): [int(round(24 * r)), 24] for j, r in enumerate(rates)}
    with open(os.path.join(d, "%s-%s-s%d.json" % (variant, arm, seed)), "w") as f:
        json.dump(dict(variant=variant, arm=arm, seed=seed, evals=[dict(step=step, problems=problems)],
                       train={"update/kl": [0.001, 0.002]}, start_model_sha256=sha), f)


def test_end_to_end():
    with tempfile.TemporaryDirectory() as tmp:
        runs = os.path.join(tmp, "runs")
        os.makedirs(runs)
        for s in range(1, 11):
            base = [(s + j) % 5 / 8 for j in range(6)]  # rates in eighths: exact in 24 samples
            for v in ("v0", "v1"):
                write_run(runs, v, "start", s, [0.5] * 6 if s != 3 else [0.75] * 6, step=0)
                write_run(runs, v, "uniform", s, base)
                # v0: signed one sample better on every problem in every seed (+1/24).
                # v1: signed equal to uniform; earliest one sample worse on every problem.
                write_run(runs, v, "signed", s, [b + (1 / 24 if v == "v0" else 0) for b in base],
                          sha="b" if (v, s) == ("v1", 5) else "a")  # one run from another start
                write_run(runs, v, "earliest", s, [max(0.0, b - 1 / 24) if v == "v1" else b for b in base])
        res = analyze2.analyze(tmp, resamples=200)
        h = {x["name"]: x for x in res["hypotheses"]}
        # H1: D = 0 in every seed (SD 0): non-inferior. H3: D = +1/24 in every seed: helps.
        assert h["H1"]["verdict"] == "not inferior (margin 1 point)", h["H1"]
        assert h["H3"]["verdict"] == "helps" and close(h["H3"]["contrast"]["mean"], 1 / 24, 1e-12), h["H3"]
        # H2: signed - earliest on v1 is +1/24 except where uniform's rate was 0 (max clips).
        assert h["H2"]["verdict"] == "helps" and h["H2"]["contrast"]["mean"] > 0, h["H2"]
        assert res["starts_outside_regime"] == [dict(variant="v0", seed=3, pass_at_1=0.75),
                                                dict(variant="v1", seed=3, pass_at_1=0.75)]
        assert "signed - earliest" in res["variants"]["v0"]["contrasts"]
        assert res["seeds_with_different_starts"] == [dict(variant="v1", seed=5)]
        md = analyze2.markdown(res)
        assert "| H3 | v0 signed - uniform |" in md and "v0 seed 3 (0.750)" in md
        assert "**Not paired**: the runs of v1 seed 5" in md


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            fn()
            print("ok", name)
