"""Credit operators from Python, each checked against hand-computed values."""
import math

import numpy as np
import pytest

import egca


def test_group_advantages_mean_std():
    # mean 0.5, population std 0.5: (R - 0.5) / (0.5 + 1e-6)
    a = egca.group_advantages([1, 0, 1, 0])
    np.testing.assert_allclose(a, [0.5 / 0.500001, -0.5 / 0.500001] * 2, rtol=1e-12)


def test_group_advantages_mean_centered_and_index():
    a = egca.group_advantages([1, 0, 0], normalization="mean_centered")
    np.testing.assert_allclose(a, [2 / 3, -1 / 3, -1 / 3])
    # two groups by index (verl's uid): each normalized on its own; equal rewards give 0
    a = egca.group_advantages([1, 0, 0.5, 0.5], index=["a", "a", "b", "b"], eps=0.0)
    np.testing.assert_allclose(a, [1, -1, 0, 0])


def test_group_advantages_bad_input():
    with pytest.raises(ValueError, match="not finite"):
        egca.group_advantages([1, float("nan")])
    with pytest.raises(ValueError, match="normalization"):
        egca.group_advantages([1, 0], normalization="zscore")
    with pytest.raises(ValueError, match="index has shape"):
        egca.group_advantages([1, 0], index=[0])
    with pytest.raises(ValueError):
        egca.group_advantages([[1, 0]])
    assert egca.constrained_reward(0.75, True) == 0.75
    assert egca.constrained_reward(0.75, False) == 0.0


TOKENS = np.array([[0, 4], [4, 8], [8, 12]])


def test_assign_token_credit_modes():
    # LOGIC: the whole A_i on the token overlapping the divergence span [5, 6)
    c = egca.assign_token_credit("LOGIC", 1.0, TOKENS, earliest=(5, 6))
    np.testing.assert_allclose(c["advantages"], [0, 1, 0])
    assert c["placement"] == "localized" and c["span_token_count"] == 1
    # soft mask 0.5: 0.5 on the span token, the other 0.5 split over the two others
    c = egca.assign_token_credit("LOGIC", 1.0, TOKENS, earliest=(5, 6), soft_weight=0.5)
    np.testing.assert_allclose(c["advantages"], [0.25, 0.5, 0.25])
    # CORRECT: uniform A_i / T_i
    c = egca.assign_token_credit("CORRECT", 0.9, TOKENS)
    np.testing.assert_allclose(c["advantages"], [0.3, 0.3, 0.3])
    # SYNTAX: the error span [0, 5) touches tokens 0 and 1; code_offset shifts spans
    c = egca.assign_token_credit("SYNTAX", -1.0, TOKENS, error_span=(0, 5))
    np.testing.assert_allclose(c["advantages"], [-0.5, -0.5, 0])
    c = egca.assign_token_credit("SYNTAX", -1.0, TOKENS, error_span=(0, 1), code_offset=8)
    np.testing.assert_allclose(c["advantages"], [0, 0, -1])
    # last-divergence target, and a missing span falls back to uniform (counted)
    c = egca.assign_token_credit("LOGIC", 3.0, TOKENS, earliest=(0, 1), last=(9, 10),
                                 target="last")
    np.testing.assert_allclose(c["advantages"], [0, 0, 3])
    c = egca.assign_token_credit("LOGIC", 3.0, TOKENS)
    np.testing.assert_allclose(c["advantages"], [1, 1, 1])
    assert (c["placement"], c["fallback"]) == ("fallback", "missing_span")


def test_assign_token_credit_bad_input():
    with pytest.raises(ValueError, match="mode"):
        egca.assign_token_credit("WRONG", 1.0, TOKENS)
    with pytest.raises(ValueError, match="soft_weight"):
        egca.assign_token_credit("LOGIC", 1.0, TOKENS, soft_weight=2)
    with pytest.raises(ValueError, match="target"):
        egca.assign_token_credit("LOGIC", 1.0, TOKENS, target="middle")
    with pytest.raises(ValueError, match=r"shape \[T, 2\]"):
        egca.assign_token_credit("LOGIC", 1.0, np.zeros((3, 3)))
    with pytest.raises(TypeError, match="token_offsets"):
        egca.assign_token_credit("LOGIC", 1.0, "tokens")
    with pytest.raises(ValueError, match="outside"):
        egca.assign_token_credit("LOGIC", 1.0, [[-1, 2]])
    with pytest.raises(ValueError):  # end < begin: AssignTokenCredit's INVALID_ARGUMENT
        egca.assign_token_credit("LOGIC", 1.0, [[4, 2]])
    with pytest.raises(ValueError):
        egca.assign_token_credit("LOGIC", math.inf, TOKENS)


def test_assign_token_credit_sign_aware_options():
    # Issue 37. LOGIC, divergence on token 1 ([5, 6)); A_i = +1 by option, by hand:
    expect = {"span": [0, 1, 0], "uniform": [1 / 3] * 3, "prefix": [1, 0, 0], "zero": [0, 0, 0]}
    for option, want in expect.items():
        c = egca.assign_token_credit("LOGIC", 1.0, TOKENS, earliest=(5, 6), positive_logic=option)
        np.testing.assert_allclose(c["advantages"], want, atol=1e-15, err_msg=option)
        # a negative advantage always goes to the span
        c = egca.assign_token_credit("LOGIC", -1.0, TOKENS, earliest=(5, 6), positive_logic=option)
        np.testing.assert_allclose(c["advantages"], [0, -1, 0], err_msg=option)
    assert egca.assign_token_credit("LOGIC", 1.0, TOKENS, earliest=(5, 6),
                                    positive_logic="zero")["placement"] == "withheld"
    # SYNTAX: raising statement on token 2 ([8, 9)), cause [4, 9) on tokens 1 and 2
    expect = {"span": [0, 0, -1], "uniform": [-1 / 3] * 3, "cause": [0, -0.5, -0.5]}
    for option, want in expect.items():
        c = egca.assign_token_credit("SYNTAX", -1.0, TOKENS, error_span=(8, 9), cause=(4, 9),
                                     syntax=option)
        np.testing.assert_allclose(c["advantages"], want, atol=1e-15, err_msg=option)
    # no cause span: cause falls back to the raising statement
    c = egca.assign_token_credit("SYNTAX", -1.0, TOKENS, error_span=(8, 9), syntax="cause")
    np.testing.assert_allclose(c["advantages"], [0, 0, -1])
    with pytest.raises(ValueError, match="positive_logic: expected"):
        egca.assign_token_credit("LOGIC", 1.0, TOKENS, positive_logic="cause")
    with pytest.raises(ValueError, match="syntax: expected"):
        egca.assign_token_credit("SYNTAX", 1.0, TOKENS, syntax="prefix")


def test_mt_grpo_hand_values():
    # G = 2, K = 2, alpha = 1: A^I = [1, -1], A^O = [-1, 1] (each / (0.5 + eps) * 0.5)
    s = 0.5 / (0.5 + 1e-6)
    a = egca.mt_grpo_advantages([[1, 0]], [0, 1])
    np.testing.assert_allclose(a, [[0, -s], [0, s]], atol=1e-12)
    a = egca.mt_grpo_advantages([[1, 0]], [0, 1], alpha=0.5)
    np.testing.assert_allclose(a, [[s - 0.5 * s, -s], [-s + 0.5 * s, s]], atol=1e-12)
    np.testing.assert_allclose(egca.outcome_only_advantages([[1, 0]], [0, 1]), [[-s, -s], [s, s]])
    # merged reward R^O + R^I = [1, 1]: all equal -> 0
    np.testing.assert_allclose(egca.merged_reward_advantages([[1, 0]], [0, 1]), [[0, 0], [0, 0]])
    np.testing.assert_allclose(egca.broadcast_turn_advantages([0.5, -1], [0, 0, 1, -1]),
                               [0.5, 0.5, -1, 0])
    with pytest.raises(ValueError):
        egca.mt_grpo_advantages([[1, 0, 1]], [0, 1])
    with pytest.raises(ValueError):
        egca.broadcast_turn_advantages([0.5], [0, 1])
    with pytest.raises(TypeError):
        egca.mt_grpo_advantages("x", [0, 1])


def _tree():
    t = egca.MurphyTree()
    a = t.add_response(-1, 0.0, "a")  # failed, expanded
    b = t.add_response(-1, 0.5, "b")  # failed, not expanded
    t.add_response(a, 1.0, "a1")
    t.add_response(a, 0.0, "a2")
    return t, a, b


def test_murphy_mars_mers_and_advantages():
    t, a, b = _tree()
    t.validate()
    assert len(t) == 4 and t.num_turns == 2
    np.testing.assert_allclose(t.backup_rewards("mars"), [1.0, 0.5, 1.0, 0.0])
    # MeRS: (r + gamma * mean_children) / 2 = (0 + 0.5) / 2
    np.testing.assert_allclose(t.backup_rewards("mers", gamma=1.0), [0.25, 0.5, 1.0, 0.0])
    adv, groups = t.node_advantages(t.backup_rewards("mars"), eps=0.0)
    # root group (1.0, 0.5): mean .75, std .25 -> +1, -1; child group (1, 0) -> +1, -1
    np.testing.assert_allclose(adv, [1, -1, 1, -1])
    assert [g["members"] for g in groups] == [[0, 1], [2, 3]]
    paths = t.grpo_mt_trajectories(eps=0.0)
    assert [p["path"] for p in paths] == [[0, 2], [0, 3], [1]]


def test_murphy_pruning_and_errors():
    t, a, b = _tree()
    pruned = t.prune("intra", 1, intra_include_root_group=False)
    assert pruned.retained == [True, True, True, False]  # keeps the child farthest from the mean (ties: first)
    r = pruned.backup_rewards("mars")
    assert math.isnan(r[3]) and r[0] == 1.0
    with pytest.raises(ValueError, match="strategy"):
        t.prune("outer", 1)
    with pytest.raises(ValueError, match="budget"):
        t.prune("intra", -1)
    with pytest.raises(IndexError, match="parent"):
        t.add_response(7, 0.0)
    with pytest.raises(ValueError, match="credited"):
        t.node_advantages([1.0])
    bad = egca.MurphyTree()
    bad.add_response(-1, 2.0)  # above max_reward
    with pytest.raises(ValueError, match="MurphyTree"):
        bad.validate()
    assert "turn 1" in t.sizes()


def test_reflexicoder():
    tr = egca.parse_reflection_trajectory(
        "<think>t</think><answer>a0</answer><reflection>r</reflection><answer>a1</answer>")
    assert tr["well_formed"] and tr["answers"] == ["a0", "a1"] and tr["reflections"] == ["r"]
    bad = egca.parse_reflection_trajectory("<answer>a</answer>")
    assert not bad["well_formed"] and bad["format_error"]
    assert egca.cycle_penalty(5) == 1.0
    w = egca.improvement_weights(2, 0.2)
    e1, e2 = math.exp(0.2), math.exp(0.4)
    np.testing.assert_allclose(w, [e1 / (e1 + e2), e2 / (e1 + e2)])
    r = egca.reflection_reward(False, [])
    assert r["overall"] == 0.0 and not r["format_ok"]
    r = egca.reflection_reward(True, [0.0, 1.0])
    assert r["n"] == 1 and r["penalty"] == 1.0 and r["overall"] > 0
    with pytest.raises(ValueError):
        egca.reflection_reward(True, [])
    with pytest.raises(TypeError, match="unknown ReflexiCoder option"):
        egca.reflection_reward(True, [1.0], bogus=1)
    with pytest.raises(TypeError):
        egca.parse_reflection_trajectory(42)
