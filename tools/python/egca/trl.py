"""TRL adapter: egca's reward R = R_hat * I_C as a GRPOTrainer reward function.

TRL calls a reward function as (trl/trainer/grpo_trainer.py, `_calculate_rewards`):

    reward_func(prompts=prompts, completions=completions, completion_ids=completion_ids,
                **reward_kwargs)  ->  list[float]

where reward_kwargs holds every other column of the data set (here: the problem id column),
`trainer_state`, and, since TRL PR #5233, `log_extra(column, values)` (extra columns of the
completions table) and `log_metric(name, value)` (a scalar logged with the trainer's
metrics). Completions are strings, or lists of {"role", "content"} messages for
conversational data sets (the last message's content is the completion).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from . import MODES, ProblemSet, mode_fractions, route_batch


def _text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return completion[-1].get("content", "")
    raise TypeError(f"a completion must be a string or a list of messages, not "
                    f"{type(completion).__name__}")


def make_reward_function(problems: ProblemSet, *, problem_id_column: str = "problem_id",
                         reward: str = "R", workers: int = 0,
                         completion_is_body: Optional[bool] = None,
                         **settings: Any) -> Callable[..., list[float]]:
    """A TRL reward function routing every completion against its problem (the data set's
    `problem_id_column` names it). reward: "R" (R_hat * I_C, EGCA eq. 1) or "r_hat" (the
    fraction of tests passed). When TRL passes log_metric / log_extra, logs
    egca/mode/<MODE> (fractions), egca/localized (LOGIC with a divergence span) and an
    egca_mode column. The function's `last_routes` attribute holds the batch's routes, for
    token credit (egca.token_advantages) after TRL computed its advantages."""
    if reward not in ("R", "r_hat"):
        raise ValueError(f"reward: expected 'R' or 'r_hat', got {reward!r}")

    def egca_reward(prompts: list, completions: list, **kwargs: Any) -> list[float]:
        if problem_id_column not in kwargs:
            raise KeyError(f"egca reward: the data set has no {problem_id_column!r} column "
                           f"(columns given: {sorted(k for k in kwargs if not k.startswith('log_'))})")
        ids = list(kwargs[problem_id_column])
        if len(ids) != len(completions):
            raise ValueError(f"egca reward: {len(ids)} problem ids for {len(completions)} "
                             f"completions")
        routes = route_batch(problems, ids, [_text(c) for c in completions], workers=workers,
                             completion_is_body=completion_is_body, **settings)
        egca_reward.last_routes = routes
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            for mode, fraction in mode_fractions(routes).items():
                log_metric(f"egca/mode/{mode}", fraction)
            n = max(1, len(routes))
            log_metric("egca/localized", sum(r.spans["earliest"] is not None for r in routes) / n)
        log_extra = kwargs.get("log_extra")
        if callable(log_extra):
            log_extra("egca_mode", [r.mode for r in routes])
        return [r.reward if reward == "R" else r.r_hat for r in routes]

    egca_reward.last_routes = []
    egca_reward.__name__ = "egca_reward"
    return egca_reward


__all__ = ["make_reward_function", "MODES"]
