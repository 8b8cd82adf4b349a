"""verl adapters: a reward-manager `compute_score` and an EGCA advantage estimator.

verl's reward manager calls (verl/utils/reward_score, custom_reward_function):

    compute_score(data_source, solution_str, ground_truth, extra_info=None)
        -> float | dict   (a dict carries "score" plus extra values, kept per sample in
                           reward_extra_info / the batch's non_tensor_batch)

and an advantage estimator is registered with `@register_adv_est(name)`
(verl/trainer/ppo/core_algos.py) and called as in compute_grpo_outcome_advantage:

    fn(token_level_rewards: Tensor (bs, L), response_mask: Tensor (bs, L),
       index: np.ndarray (bs,), epsilon=1e-6, norm_adv_by_std_in_grpo=True, config=None)
        -> (advantages (bs, L), returns (bs, L))

verl's generic branch passes token_level_rewards, response_mask, config, index (the uid)
and reward_baselines only; egca's spans travel as compute_score's extra values
("egca_record": the route's egca-batch record, JSON) and reach the estimator through
`non_tensor_batch=` (what verl passes GDPO's estimator), or through `egca_records=`.
"""
from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any, Optional, Sequence

import numpy as np

from . import ProblemSet, Router, assign_token_credit, group_advantages, load_problems, token_offsets

_problems: dict[str, ProblemSet] = {}
_routers: "OrderedDict[tuple, Router]" = OrderedDict()
_settings: dict[str, Any] = {"problems": None, "tokenizer": None, "max_routers": 64}


def configure(problems: Optional[str | ProblemSet] = None, tokenizer: Any = None,
              max_routers: int = 64) -> None:
    """Sets the problem set compute_score routes against (a path or a ProblemSet; extra_info
    may name another with "problems_path"), the tokenizer the estimator maps spans with (an
    egca.Tokenizer or a Hugging Face tokenizer: the same as the policy's), and how many
    per-problem routers (one warm executor each) stay cached."""
    if problems is not None:
        _settings["problems"] = problems if isinstance(problems, ProblemSet) else _load(problems)
    if tokenizer is not None:
        _settings["tokenizer"] = tokenizer
    _settings["max_routers"] = max_routers


def _load(path: str) -> ProblemSet:
    if path not in _problems:
        _problems[path] = load_problems(path)
    return _problems[path]


def _router(problems: ProblemSet, problem_id: str) -> Router:
    key = (problems.path, problem_id)
    router = _routers.get(key)
    if router is None:
        router = Router(problems, problem_id)
        _routers[key] = router
        while len(_routers) > _settings["max_routers"]:
            _routers.popitem(last=False)
    _routers.move_to_end(key)
    return router


def compute_score(data_source: str, solution_str: str, ground_truth: Any,
                  extra_info: Optional[dict] = None) -> dict:
    """Routes solution_str against its problem and returns {"score": R, "egca_mode", "r_hat",
    "egca_record", "egca_completion"} (the extra values the estimator reads back). The
    problem id is extra_info["problem_id"], else ground_truth (a str); the problem set is
    extra_info["problems_path"], else configure(problems=...)."""
    extra_info = extra_info or {}
    problem_id = extra_info.get("problem_id", ground_truth)
    if not isinstance(problem_id, str):
        raise TypeError("egca compute_score: the problem id (extra_info['problem_id'] or "
                        f"ground_truth) must be a str, not {type(problem_id).__name__}")
    path = extra_info.get("problems_path")
    problems = _load(path) if path else _settings["problems"]
    if problems is None:
        raise ValueError("egca compute_score: no problem set (call egca.verl.configure("
                         "problems=...) or put problems_path in extra_info)")
    route = _router(problems, problem_id).route(solution_str)
    return {"score": route.reward, "egca_mode": route.mode, "r_hat": route.r_hat,
            "egca_record": route.record_json(), "egca_completion": solution_str}


def _completion_span(record: dict, name: str) -> Optional[tuple[int, int]]:
    """A span of an egca-batch record in completion bytes ("completion": [begin, end, ...])."""
    span = record.get(name)
    if not span or span.get("completion") is None:
        return None
    return (span["completion"][0], span["completion"][1])


def _chars_to_bytes(text: str, offsets: np.ndarray) -> np.ndarray:
    """Character offsets of `text` as UTF-8 byte offsets (vectorized)."""
    raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    starts = np.append(np.nonzero((raw & 0xC0) != 0x80)[0], len(raw))
    return starts[np.clip(offsets, 0, len(starts) - 1)]


def egca_advantage(token_level_rewards: Any, response_mask: Any, index: Optional[np.ndarray] = None,
                   epsilon: float = 1e-6, norm_adv_by_std_in_grpo: bool = True,
                   config: Any = None, non_tensor_batch: Optional[dict] = None,
                   egca_records: Optional[Sequence[str]] = None,
                   solution_strs: Optional[Sequence[str]] = None, target: str = "earliest",
                   soft_weight: float = 1.0, scale: str = "verl", **kwargs: Any):
    """GRPO advantages of the sequence scores (token_level_rewards.sum(-1), grouped by
    `index`), spread over each response's tokens by egca's operator (EGCA eq. 6): the
    divergence span of a LOGIC sample, the error span of a SYNTAX one, uniform otherwise.
    scale="verl": a sample with uniform credit gets verl's GRPO advantage A_i on every
    token (the operator's a_{i,t} times T_i); "egca": a_{i,t} as the operator gives it (sum
    A_i). Rows without an egca record (or records without offsets) get uniform credit.
    Returns (advantages, returns), both (bs, L) like response_mask."""
    import torch

    scores = token_level_rewards.sum(dim=-1).detach().cpu().numpy().astype(np.float64)
    bs, length = response_mask.shape
    if index is None:
        index = np.zeros(bs, dtype=np.int64)
    if norm_adv_by_std_in_grpo:
        adv = group_advantages(scores, index, normalization="mean_std", eps=epsilon)
    else:
        adv = group_advantages(scores, index, normalization="mean_centered")
    if egca_records is None and non_tensor_batch is not None:
        egca_records = non_tensor_batch.get("egca_record")
    mask = response_mask.detach().cpu().numpy().astype(bool)
    lengths = mask.sum(axis=1)
    out = np.zeros((bs, length), dtype=np.float32)
    records = [json.loads(r) if isinstance(r, str) and r else None
               for r in (egca_records if egca_records is not None else [None] * bs)]
    texts = solution_strs
    if texts is None and non_tensor_batch is not None:
        for key in ("egca_completion", "solution_str"):
            if key in non_tensor_batch:
                texts = list(non_tensor_batch[key])
                break
    tokenizer = _settings["tokenizer"]
    offsets: list = [None] * bs
    chars = False
    if tokenizer is not None and any(r is not None for r in records):
        comps = [t if t is not None else "" for t in (texts or [None] * bs)]
        offsets, chars = token_offsets(comps, tokenizer)
    for i in range(bs):
        t_i = int(lengths[i])
        row = np.full(t_i, adv[i] / max(t_i, 1))
        rec = records[i]
        if rec is not None and offsets[i] is not None and t_i > 0:
            o = np.asarray(offsets[i], dtype=np.int64).reshape(-1, 2)[:t_i]
            if chars:
                o = _chars_to_bytes((texts or [""] * bs)[i], o)
            if len(o) < t_i:
                # Response tokens the re-tokenized text does not have (an end-of-sequence
                # token): zero-width ranges at the end, which no span overlaps.
                end = int(o[-1, 1]) if len(o) else 0
                o = np.vstack([o, np.full((t_i - len(o), 2), end, dtype=np.int64)])
            credit = assign_token_credit(rec["mode"], float(adv[i]), o,
                                         error_span=_completion_span(rec, "error"),
                                         earliest=_completion_span(rec, "earliest"),
                                         last=_completion_span(rec, "last"),
                                         random=_completion_span(rec, "random"),
                                         sample_index=i, target=target,
                                         soft_weight=soft_weight)
            row = credit["advantages"]
        if scale == "verl":
            row = row * t_i
        elif scale != "egca":
            raise ValueError(f"scale: expected 'verl' or 'egca', got {scale!r}")
        positions = np.nonzero(mask[i])[0]
        out[i, positions] = row[: len(positions)]
    advantages = torch.from_numpy(out).to(response_mask.device) * response_mask
    return advantages, advantages


def register(name: str = "egca") -> Any:
    """Registers egca_advantage with verl (`register_adv_est(name)`); needs verl."""
    from verl.trainer.ppo.core_algos import register_adv_est  # type: ignore

    return register_adv_est(name)(egca_advantage)


__all__ = ["compute_score", "configure", "egca_advantage", "register"]
