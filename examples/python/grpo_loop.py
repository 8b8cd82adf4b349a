#!/usr/bin/env python3
"""A complete GRPO loop in plain PyTorch that uses `import egca` for routing and credit.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/grpo_loop.py [--steps 30]
        [--target earliest|last|random|uniform] [--seed 0] [--workers 2]

The task family (as examples/learns/ builds it): "count the numbers in xs that are
<op> <k>" for 6 comparisons x 5 constants = 30 MBPP-format problems, each with 6 assert
tests. A policy that writes Python from scratch cannot learn in a minute on a CPU, so the
action space is honest but small: a program is 6 lines and the policy picks each line from a
short list of real alternatives (the right line and the near-misses examples/learns uses: a
wrong initial value, loop range, comparison, constant, update, return). The chosen lines
are assembled into a real program, which egca routes against the problem's reference like
any completion (SYNTAX / CONSTRAINT / LOGIC / CORRECT, the earliest divergence). One line
is one token: its byte range in the completion is the token's offset, so egca's credit
operator puts a LOGIC sample's advantage on the line where execution first diverges.

Each step: sample G programs for each of P problems (the policy is an MLP from the problem's
(op, k) to 6 categorical line choices), route them with egca.route_batch on one
egca.RoutePool (the same warm sandbox servers every step), reward
R = R_hat * I_C, GRPO advantages per problem (egca.group_advantages), token advantages
(egca.token_advantages -> torch [B, 6]), and a REINFORCE update of sum_t a_{i,t} log pi.
The report: the greedy policy's mean reward on all 30 problems before and after, and the
sampled reward per step. Exit status 1 if the greedy reward did not increase, 77 if no
executor can start in this Python process.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

import numpy as np
import torch

import egca

OPS = [">", ">=", "<", "<=", "==", "!="]
WORDS = {">": "greater than", ">=": "at least", "<": "less than", "<=": "at most",
         "==": "equal to", "!=": "different from"}
KS = [0, 1, 2, 3, 4]


def line_choices(op: str, k: int) -> list[list[str]]:
    """The 6 line slots of a program for problem (op, k): choice 0 of slot 0 is fixed,
    slot 3 lists every comparison with k - 1, k, k + 1. The right lines are among them."""
    return [
        ["def count_items(xs):"],
        ["    n = 0", "    n = 1", "    n = -1"],
        ["    for x in xs:", "    for x in xs[1:]:", "    for x in xs[:-1]:"],
        [f"        if x {o} {c}:" for o in OPS for c in (k - 1, k, k + 1)],
        ["            n += 1", "            n = 1", "            n += x"],
        ["    return n", "    return n + 1", "    return 0"],
    ]


SLOTS = [len(s) for s in line_choices(">", 0)]


def make_problems(directory: str, seed: int) -> str:
    """Writes the 30 problems as MBPP JSONL (task_id, text, code, test_list)."""
    rng = random.Random(seed)
    path = os.path.join(directory, "count_items.jsonl")
    with open(path, "w") as f:
        for pid, (op, k) in enumerate((op, k) for op in OPS for k in KS):
            reference = "\n".join(["def count_items(xs):", "    n = 0", "    for x in xs:",
                                   f"        if x {op} {k}:", "            n += 1",
                                   "    return n"]) + "\n"
            scope: dict = {}
            exec(reference, scope)  # the reference is ours: its answers are the expectations
            tests = []
            for _ in range(6):
                xs = [rng.randint(-2, 6) for _ in range(rng.randint(1, 7))]
                tests.append(f"assert count_items({xs}) == {scope['count_items'](xs)}")
            f.write(json.dumps({"task_id": pid + 1, "text": f"Count the numbers in xs that are "
                                f"{WORDS[op]} {k}.", "code": reference, "test_list": tests,
                                "test_setup_code": "", "challenge_test_list": []}) + "\n")
    return path


class Policy(torch.nn.Module):
    """(op, k) one-hot [B, 11] -> logits of every slot's choices."""

    def __init__(self, hidden: int = 64):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(len(OPS) + len(KS), hidden),
                                        torch.nn.Tanh())
        self.heads = torch.nn.ModuleList(torch.nn.Linear(hidden, n) for n in SLOTS)

    def forward(self, features: torch.Tensor) -> list[torch.Tensor]:
        h = self.body(features)
        return [head(h) for head in self.heads]  # each [B, choices]


def features(problems: list[tuple[str, int]]) -> torch.Tensor:
    x = torch.zeros(len(problems), len(OPS) + len(KS))
    for i, (op, k) in enumerate(problems):
        x[i, OPS.index(op)] = 1
        x[i, len(OPS) + KS.index(k)] = 1
    return x


def assemble(op: str, k: int, picks: list[int]) -> tuple[str, np.ndarray]:
    """The program of `picks` and the byte range of each line (one token per line)."""
    choices = line_choices(op, k)
    lines = [choices[s][c] + "\n" for s, c in enumerate(picks)]
    offsets, at = [], 0
    for line in lines:
        offsets.append((at, at + len(line.encode())))
        at += len(line.encode())
    return "".join(lines), np.array(offsets, dtype=np.int64)


def greedy_reward(policy: Policy, problem_set, table, pool) -> tuple[float, dict]:
    with torch.no_grad():
        logits = policy(features(table))
    picks = torch.stack([l.argmax(-1) for l in logits], dim=1).tolist()
    programs = [assemble(op, k, p)[0] for (op, k), p in zip(table, picks)]
    ids = [f"mbpp/{i + 1}" for i in range(len(table))]
    routes = egca.route_batch(problem_set, ids, programs, pool=pool, completion_is_body=False)
    return float(np.mean([r.reward for r in routes])), egca.mode_fractions(routes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--prompts", type=int, default=8, help="problems per step")
    ap.add_argument("--group", type=int, default=8, help="G: programs per problem")
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--target", default="earliest", choices=egca.TARGETS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    start = time.time()

    with tempfile.TemporaryDirectory(prefix="egca-grpo-") as tmp:
        problem_set = egca.load_problems(make_problems(tmp, args.seed), format="mbpp")
    table = [(op, k) for op in OPS for k in KS]  # problem i is mbpp/{i + 1}
    policy = Policy()
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.lr)
    pool = egca.RoutePool(workers=args.workers)  # servers start on the first call, stay warm
    try:
        before, before_modes = greedy_reward(policy, problem_set, table, pool)
    except RuntimeError as e:
        # The executor's server is egca's exec'd egca-py-server: failing to start it is an
        # error of the build (a missing binary), reported as a failure.
        print(f"grpo_loop: cannot route from this Python process: {e}", file=sys.stderr)
        return 1
    print(f"greedy reward before: {before:.3f}  modes {before_modes}", flush=True)

    for step in range(1, args.steps + 1):
        chosen = rng.sample(range(len(table)), args.prompts)
        group_problems = [table[i] for i in chosen for _ in range(args.group)]
        logits = policy(features(group_problems))
        dists = [torch.distributions.Categorical(logits=l) for l in logits]
        picks = torch.stack([d.sample() for d in dists], dim=1)           # [B, 6]
        logp = torch.stack([d.log_prob(picks[:, s]) for s, d in enumerate(dists)], dim=1)
        programs, offsets = zip(*(assemble(op, k, p)
                                  for (op, k), p in zip(group_problems, picks.tolist())))
        ids = [f"mbpp/{i + 1}" for i in chosen for _ in range(args.group)]
        routed = time.time()
        routes = egca.route_batch(problem_set, ids, list(programs), pool=pool,
                                  completion_is_body=False)
        routed = time.time() - routed
        rewards = np.array([r.reward for r in routes])
        adv = egca.group_advantages(rewards, index=ids)                   # [B]
        credit = egca.token_advantages(routes, adv, token_offsets=list(offsets),
                                       target=args.target, seed=step, return_tensors="pt")
        a = credit.advantages                                             # [B, 6], rows sum to A_i
        loss = -(a * logp).sum() / len(routes)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        modes = egca.mode_fractions(routes)
        print(f"step {step:3d}  reward {rewards.mean():.3f}  LOGIC {modes['LOGIC']:.2f}  "
              f"CORRECT {modes['CORRECT']:.2f}  SYNTAX {modes['SYNTAX']:.2f}  "
              f"localized {credit.placement.count('localized')}/{len(routes)}  "
              f"route {routed:.2f}s  {time.time() - start:.1f}s", flush=True)

    after, after_modes = greedy_reward(policy, problem_set, table, pool)
    pool.close()
    print(f"greedy reward after:  {after:.3f}  modes {after_modes}")
    print(f"greedy reward {before:.3f} -> {after:.3f} ({after - before:+.3f}) in {args.steps} "
          f"steps, target {args.target}, seed {args.seed}, {time.time() - start:.1f} s")
    if after <= before:
        print("grpo_loop: the greedy reward did not increase", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
