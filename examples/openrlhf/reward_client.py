#!/usr/bin/env python3
"""What OpenRLHF does with `--remote_rm_url http://HOST:PORT/get_reward`, against egca-serve,
plus the token credit a trainer can add with its own tokenizer.

    build/tools/egca-serve/egca-serve --problems ../shared/data/humaneval/HumanEval.jsonl.gz \
        --port 8000 --workers 4 &
    PYTHONPATH=build/python /usr/bin/python3 examples/openrlhf/reward_client.py \
        http://127.0.0.1:8000

1. One rollout batch as OpenRLHF's experience maker sends it: POST /get_reward with
   {"query": [prompt + response], "prompts": [prompt], "labels": [label]}, the label being the
   data set's problem id (OpenRLHF: --label_key). egca-serve answers {"rewards", "scores",
   "extra_logs"}: R = R_hat * I_C per sample, and per-sample numbers OpenRLHF logs
   (egca_mode, egca_r_hat, egca_localized, ...).
2. The same responses through POST /route (egca-batch's records: mode, spans in completion
   bytes) and POST /token_advantages (GRPO advantages per prompt group, then EGCA's token
   credit on the tokens of each response; a whitespace tokenizer stands in for the model's).
Exit 0 when the rewards of both calls agree and every LOGIC response's credit sums to its
advantage.
"""
from __future__ import annotations

import argparse
import re
import sys

from egca.client import RemoteRouter  # pip-installed egca, or PYTHONPATH=build/python

# HumanEval/0 (has_close_elements): a group of 4 responses to one prompt, as a policy could
# sample them: right, an off-by-one comparison, a syntax error, and right again.
PROMPT = "<|im_start|>user\nComplete has_close_elements.<|im_end|>\n<|im_start|>assistant\n"
RESPONSES = [
    "    for i, a in enumerate(numbers):\n        for j, b in enumerate(numbers):\n"
    "            if i != j and abs(a - b) < threshold:\n                return True\n"
    "    return False\n",
    "    for i, a in enumerate(numbers):\n        for j, b in enumerate(numbers):\n"
    "            if i != j and abs(a - b) > threshold:\n                return True\n"
    "    return False\n",
    "    for i in range(len(numbers):\n        return True\n",
    "    return any(abs(a - b) < threshold for i, a in enumerate(numbers)\n"
    "               for j, b in enumerate(numbers) if i != j)\n",
]


def whitespace_tokens(text: str) -> list[list[int]]:
    """[begin, end) byte offsets of runs of non-space and space characters."""
    data = text.encode()
    return [[m.start(), m.end()] for m in re.finditer(rb"\S+|\s+", data)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("url", help="egca-serve's address, http://HOST:PORT")
    args = ap.parse_args()
    rr = RemoteRouter(args.url)
    print("server:", rr.health())

    # 1. OpenRLHF's call
    rm = rr.get_reward([PROMPT + r for r in RESPONSES], [PROMPT] * len(RESPONSES),
                       ["HumanEval/0"] * len(RESPONSES))
    modes = ["SYNTAX", "CONSTRAINT", "LOGIC", "CORRECT"]
    print("rewards:", rm["rewards"])
    print("modes:  ", [modes[m] for m in rm["extra_logs"]["egca_mode"]])

    # 2. records, then token credit with the trainer's tokenizer
    routed = rr.route_completions(["HumanEval/0"] * len(RESPONSES), RESPONSES,
                                  completion_is_body=True)
    records = [r["record"] for r in routed]
    offsets = [whitespace_tokens(r) for r in RESPONSES]
    credit = rr.token_advantages(records, rewards=rm["rewards"], token_offsets=offsets,
                                 groups=[PROMPT] * len(RESPONSES))
    ok = [r["reward"] for r in routed] == rm["rewards"]
    for i, rec in enumerate(records):
        a = credit["token_advantages"][i]
        hot = [RESPONSES[i].encode()[offsets[i][t][0]:offsets[i][t][1]].decode()
               for t in range(len(a)) if a[t] != 0]
        print(f"{i}: {rec['mode']:8} R={rm['rewards'][i]:.3f} A={credit['advantages'][i]:+.3f} "
              f"{credit['placement'][i]:9} tokens with credit: {hot[:8]}")
        if rec["mode"] == "LOGIC":
            ok = ok and abs(sum(a) - credit["advantages"][i]) < 1e-9
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
