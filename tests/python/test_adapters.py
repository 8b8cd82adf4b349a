"""The TRL and verl adapters, called with the argument shapes their documentation gives
(no TRL or verl is installed here)."""
import json

import numpy as np
import pytest
import torch

import egca
import egca.trl
import egca.verl
from conftest import HE0_CORRECT, HE0_LOGIC, HE0_SYNTAX, HUMANEVAL


class CharTokenizer:
    """Hugging Face's call interface: one token per character, character offsets."""

    def __call__(self, texts, return_offsets_mapping=False):
        return {"offset_mapping": [[(i, i + 1) for i in range(len(t))] for t in texts]}


def _record(mode, earliest=None):
    span = None if earliest is None else {"program": [0, 0, 1, 0, 1, 0],
                                          "completion": [earliest[0], earliest[1], 1, 0, 1, 0]}
    return json.dumps({"mode": mode, "earliest": span, "last": None, "random": None,
                       "error": None})


def test_verl_estimator_hand_values():
    egca.verl.configure(tokenizer=CharTokenizer())
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 0]],
                        dtype=torch.float32)
    rewards = torch.zeros(4, 4)
    for i, (score, last) in enumerate([(1.0, 2), (0.0, 2), (0.5, 1), (0.5, 2)]):
        rewards[i, last] = score
    records = [_record("CORRECT"), _record("LOGIC", (1, 2)), _record("CORRECT"), None]
    adv, ret = egca.verl.egca_advantage(
        token_level_rewards=rewards, response_mask=mask, index=np.array([0, 0, 1, 1]),
        non_tensor_batch={"egca_record": np.array(records, dtype=object),
                          "solution_str": np.array(["abc", "abc", "ab", "abc"], dtype=object)})
    s = 0.5 / (0.5 + 1e-6)  # group (1, 0): +-s; group (0.5, 0.5): 0
    want = np.array([[s, s, s, 0], [0, -3 * s, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_allclose(adv.numpy(), want, rtol=1e-6)
    assert adv.shape == mask.shape and torch.equal(adv, ret)
    # scale="egca": the operator's values (row sums A_i)
    adv, _ = egca.verl.egca_advantage(rewards, mask, index=np.array([0, 0, 1, 1]),
                                      egca_records=records, solution_strs=["abc", "abc", "ab", "abc"],
                                      scale="egca")
    np.testing.assert_allclose(adv.numpy()[0], [s / 3] * 3 + [0], rtol=1e-6)
    np.testing.assert_allclose(adv.numpy()[1], [0, -s, 0, 0], rtol=1e-6)
    # without egca records: verl's GRPO (A_i on every response token)
    adv, _ = egca.verl.egca_advantage(rewards, mask, index=np.array([0, 0, 1, 1]))
    np.testing.assert_allclose(adv.numpy()[1], [-s, -s, -s, 0], rtol=1e-6)
    with pytest.raises(ValueError, match="scale"):
        egca.verl.egca_advantage(rewards, mask, egca_records=records,
                                 solution_strs=["abc"] * 4, scale="other")


def test_verl_compute_score(humaneval, routing):
    egca.verl.configure(problems=humaneval)
    out = egca.verl.compute_score("openai_humaneval", HE0_LOGIC, "HumanEval/0")
    assert out["egca_mode"] == "LOGIC" and out["score"] == out["r_hat"] < 1
    rec = json.loads(out["egca_record"])
    assert rec["earliest"]["completion"] is not None
    good = egca.verl.compute_score("x", HE0_CORRECT, None,
                                   extra_info={"problem_id": "HumanEval/0",
                                               "problems_path": str(HUMANEVAL)})
    assert good["score"] == 1.0
    with pytest.raises(KeyError, match="did you mean"):
        egca.verl.compute_score("x", HE0_CORRECT, "HumanEval/0x")
    with pytest.raises(TypeError, match="problem id"):
        egca.verl.compute_score("x", HE0_CORRECT, 7)


def test_trl_reward_function(humaneval, routing):
    fn = egca.trl.make_reward_function(humaneval, completion_is_body=True, workers=2)
    metrics, extra = {}, {}
    rewards = fn(prompts=["p"] * 3, completions=[HE0_CORRECT, HE0_LOGIC, HE0_SYNTAX],
                 completion_ids=[[1], [2], [3]], problem_id=["HumanEval/0"] * 3,
                 trainer_state=None, log_metric=lambda k, v: metrics.__setitem__(k, v),
                 log_extra=lambda k, v: extra.__setitem__(k, v))
    assert rewards[0] == 1.0 and 0 <= rewards[1] < 1 and rewards[2] == 0.0
    assert metrics["egca/mode/CORRECT"] == pytest.approx(1 / 3)
    assert metrics["egca/mode/SYNTAX"] == pytest.approx(1 / 3)
    assert metrics["egca/localized"] == pytest.approx(1 / 3)
    assert extra["egca_mode"] == ["CORRECT", "LOGIC", "SYNTAX"]
    assert [r.mode for r in fn.last_routes] == extra["egca_mode"]
    # conversational completions, no logging callbacks given
    conv = [[{"role": "assistant", "content": HE0_CORRECT}]]
    assert fn(prompts=["p"], completions=conv, problem_id=["HumanEval/0"]) == [1.0]
    with pytest.raises(KeyError, match="problem_id"):
        fn(prompts=["p"], completions=[HE0_CORRECT])
    with pytest.raises(TypeError, match="completion"):
        fn(prompts=["p"], completions=[42], problem_id=["HumanEval/0"])
    with pytest.raises(ValueError, match="reward"):
        egca.trl.make_reward_function(humaneval, reward="R2")
