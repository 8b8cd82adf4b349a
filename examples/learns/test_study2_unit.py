#!/usr/bin/python3
"""Unit tests of study2.py (the confirmatory credit study's driver): the pilot rule, the
phase rules of the learning rates and the arms' egca-train overrides, values by hand.

    test_study2_unit.py      (ctest learns_study2_unit)
"""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
spec = importlib.util.spec_from_file_location("study2", os.path.join(HERE, "study2.py"))
study2 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(study2)


def close(a, b, tol=1e-12):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def test_pilot_takes_the_best_when_nothing_is_near():
    scores = {"pl-uniform.sx-span.rn-true": 0.40, "pl-zero.sx-cause.rn-false": 0.47,
              "pl-uniform.sx-cause.rn-true": 0.44}
    assert study2.pilot_pick(scores) == "pl-zero.sx-cause.rn-false"


def test_pilot_prefers_the_simpler_within_half_a_point():
    # Best 0.470 (rn false); 0.466 is within 0.005 and renormalizes: it wins.
    scores = {"pl-zero.sx-cause.rn-false": 0.470, "pl-zero.sx-cause.rn-true": 0.466,
              "pl-uniform.sx-span.rn-true": 0.460}
    assert study2.pilot_pick(scores) == "pl-zero.sx-cause.rn-true"
    # Now the plain one is within too (0.465): renormalize ties, syntax span beats cause.
    scores["pl-uniform.sx-span.rn-true"] = 0.465
    assert study2.pilot_pick(scores) == "pl-uniform.sx-span.rn-true"
    # Order of the preferences: rn before sx before pl. (zero, span, true) against (uniform,
    # cause, true): both renormalize; span beats cause although zero loses to uniform.
    scores = {"pl-zero.sx-span.rn-true": 0.300, "pl-uniform.sx-cause.rn-true": 0.302}
    assert study2.pilot_pick(scores) == "pl-zero.sx-span.rn-true"
    # Just outside half a point: the better one stands.
    scores = {"pl-zero.sx-cause.rn-false": 0.470, "pl-uniform.sx-span.rn-true": 0.4649}
    assert study2.pilot_pick(scores) == "pl-zero.sx-cause.rn-false"
    # The edge (exactly 0.5 points) counts as near.
    scores = {"pl-zero.sx-cause.rn-false": 0.470, "pl-uniform.sx-span.rn-true": 0.465}
    assert study2.pilot_pick(scores) == "pl-uniform.sx-span.rn-true"


def test_pilot_equally_simple_goes_to_the_higher_score():
    scores = {"pl-uniform.sx-span.rn-true": 0.500, "pl-uniform.sx-span.rn-false": 0.503,
              "pl-zero.sx-span.rn-true": 0.502}
    # Both renormalizing ones are near; (uniform) is simpler than (zero) at equal rn and sx.
    assert study2.pilot_pick(scores) == "pl-uniform.sx-span.rn-true"


def test_phase3_rule():
    # Whole-run KL 1.2x uniform's: within 1.25x, phase 2 stands; 1.3x or 1/1.3x: phase 3.
    assert not study2.phase3_needed(0.012, 0.010)
    assert not study2.phase3_needed(0.010 / 1.25, 0.010)  # the edge is inside
    assert study2.phase3_needed(0.013, 0.010)
    assert study2.phase3_needed(0.010 / 1.3, 0.010)
    assert not study2.phase3_needed(0.0, 0.010)  # nothing moved: nothing to match
    # Phase 3's rate, the lr^2 law from phase 2: KL 4x the target -> half the rate.
    assert close(study2.phase3_lr(4e-4, 0.04, 0.01), 2e-4)
    # 100x too small a KL would ask 10x the rate: cut to 4x.
    assert close(study2.phase3_lr(1e-4, 0.0001, 0.01), 4e-4)


def test_config_sets():
    assert study2.config_sets("uniform") == ["credit.target=uniform"]
    paper = ["credit.target=earliest", "credit.positive_logic=span", "credit.syntax=span", "credit.renormalize=true"]
    assert study2.config_sets("earliest") == paper
    assert study2.config_sets("pl-zero.sx-cause.rn-false") == [
        "credit.target=earliest", "credit.positive_logic=zero", "credit.syntax=cause", "credit.renormalize=false"]
    assert study2.config_sets("signed", "pl-uniform.sx-span.rn-true")[1] == "credit.positive_logic=uniform"
    assert study2.config_sets("binary-uniform") == ["reward.kind=binary", "credit.target=uniform"]
    assert study2.config_sets("binary-signed", "pl-zero.sx-span.rn-true") == [
        "reward.kind=binary", "credit.target=earliest", "credit.positive_logic=zero", "credit.syntax=span",
        "credit.renormalize=true"]
    for bad in ("signed", "pl-bogus.sx-span.rn-true", "pl-uniform.sx-span", "earliest-ish"):
        try:
            study2.config_sets(bad)
        except ValueError:
            continue
        raise AssertionError("accepted %r" % bad)


def test_candidates_and_cells():
    c = study2.pilot_candidates(False)
    assert len(c) == 8 and len(set(c)) == 8
    assert all(study2.parse_candidate(x)[0] in ("uniform", "zero") for x in c)
    # The 2 x 2's (positive_logic uniform, syntax span) cell is a pilot candidate; the other
    # two cells are tuned in the secondary block; (span, span) is `earliest`.
    assert study2.TWO_BY_TWO[0] in c and study2.TWO_BY_TWO[1] not in c and study2.TWO_BY_TWO[2] not in c


def test_mean_kl_skips_missing_steps():
    r = dict(variant="v1", arm="x", seed=1, train={"update/kl": [0.01, None, 0.03]})
    assert close(study2.mean_kl(r), 0.02)
    try:
        study2.mean_kl(dict(r, train={"update/kl": [None]}))
    except ValueError:
        pass
    else:
        raise AssertionError("no KL accepted")


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            fn()
            print("ok", name)
