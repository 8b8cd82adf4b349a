#!/usr/bin/env python3
"""Generates the `learns` task family from a seed (Python 3 standard library only).

    make_family.py OUT_DIR [--seed N] [--heldout-fraction F] [--correct-per-problem C]
                   [--misses-per-problem M] [--merges K]

Writes into OUT_DIR:
  train.jsonl, heldout.jsonl  MBPP-format problems (task_id, text, code, test_list); the two
                              splits hold disjoint (template, comparison, constant) triples
  corpus.jsonl                pre-training completions for the train problems: C correct
                              solutions and M near-misses each, {"task_id", "text",
                              "completion", "kind", "bug_kind", "bug_line"}
  near_misses.jsonl           every single-bug mutation of every problem that fails at least
                              one test: {"problem_id", "program", "bug_kind", "bug_line"}
                              (bug_line: 1-based line of the program)
  tokenizer.json              a byte-level BPE tokenizer trained on the corpus (GPT-2
                              pre-tokenizer, at most K merges: merging stops at pairs seen
                              once) with the ChatML special tokens and <think>, </think>
  family.json                 counts and the generation parameters

A near-miss is the reference with one line changed: a wrong comparison (> for >=, ...), a
wrong bound (the constant off by one, a loop range off by one) or a missing/wrong update.
Every kept near-miss fails at least one unit test, checked here by running it.
"""
import argparse
import json
import os
import random
import re
from collections import Counter

OPS = {
    ">": "greater than {k}",
    ">=": "at least {k}",
    "<": "less than {k}",
    "<=": "at most {k}",
    "==": "equal to {k}",
    "!=": "different from {k}",
}
# The comparison a near-miss writes instead of the right one.
WRONG_OP = {">": [">="], ">=": [">"], "<": ["<="], "<=": ["<"], "==": [">=", "<="], "!=": [">", "<"]}

# Each template: function name, statement, reference lines ({op}, {k} substituted), whether
# it takes the prefix length m, and its near-misses as (line index, replacement, kind).
# "{cmp_line}" marks the line holding the comparison.
TEMPLATES = [
    dict(name="count_items", m=False,
         text="Write a function count_items(xs) that returns how many numbers in the list xs are {cond}.",
         lines=["def count_items(xs):", "    n = 0", "    for x in xs:", "        if x {op} {k}:",
                "            n += 1", "    return n"],
         cmp_line=3, misses=[(4, "            n = 1", "update"), (1, "    n = 1", "init")]),
    dict(name="sum_items", m=False,
         text="Write a function sum_items(xs) that returns the sum of the numbers in the list xs that are {cond}.",
         lines=["def sum_items(xs):", "    s = 0", "    for x in xs:", "        if x {op} {k}:",
                "            s += x", "    return s"],
         cmp_line=3, misses=[(4, "            s = x", "update"), (4, "            s += 1", "update")]),
    dict(name="keep_items", m=False,
         text="Write a function keep_items(xs) that returns the list of the numbers in xs that are {cond}, in order.",
         lines=["def keep_items(xs):", "    out = []", "    for x in xs:", "        if x {op} {k}:",
                "            out.append(x)", "    return out"],
         cmp_line=3, misses=[(4, "            out = [x]", "update")]),
    dict(name="first_index", m=False,
         text="Write a function first_index(xs) that returns the index of the first number in xs that is {cond}, or -1 if there is none.",
         lines=["def first_index(xs):", "    for i in range(len(xs)):", "        if xs[i] {op} {k}:",
                "            return i", "    return -1"],
         cmp_line=2, misses=[(1, "    for i in range(1, len(xs)):", "range"),
                             (3, "            return i + 1", "update")]),
    dict(name="last_index", m=False,
         text="Write a function last_index(xs) that returns the index of the last number in xs that is {cond}, or -1 if there is none.",
         lines=["def last_index(xs):", "    idx = -1", "    for i in range(len(xs)):", "        if xs[i] {op} {k}:",
                "            idx = i", "    return idx"],
         cmp_line=3, misses=[(2, "    for i in range(len(xs) - 1):", "range"), (1, "    idx = 0", "init")]),
    dict(name="all_items", m=False,
         text="Write a function all_items(xs) that returns True if every number in the list xs is {cond}, and False otherwise.",
         lines=["def all_items(xs):", "    for x in xs:", "        if not x {op} {k}:",
                "            return False", "    return True"],
         cmp_line=2, misses=[(1, "    for x in xs[1:]:", "range")]),
    dict(name="any_items", m=False,
         text="Write a function any_items(xs) that returns True if some number in the list xs is {cond}, and False otherwise.",
         lines=["def any_items(xs):", "    for x in xs:", "        if x {op} {k}:",
                "            return True", "    return False"],
         cmp_line=2, misses=[(1, "    for x in xs[:-1]:", "range")]),
    dict(name="count_prefix", m=True,
         text="Write a function count_prefix(xs, m) that returns how many of the first m numbers of the list xs are {cond}.",
         lines=["def count_prefix(xs, m):", "    n = 0", "    for i in range(m):", "        if xs[i] {op} {k}:",
                "            n += 1", "    return n"],
         cmp_line=3, misses=[(2, "    for i in range(m - 1):", "range"), (2, "    for i in range(1, m):", "range")]),
    dict(name="largest_item", m=False,
         text="Write a function largest_item(xs) that returns the largest number in the list xs that is {cond}, or None if there is none.",
         lines=["def largest_item(xs):", "    best = None", "    for x in xs:",
                "        if x {op} {k} and (best is None or x > best):", "            best = x", "    return best"],
         cmp_line=3, misses=[(3, "        if x {op} {k} and (best is None or x < best):", "compare")]),
]

TESTS_PER_PROBLEM = 6


def render(lines, op, k):
    return "\n".join(l.format(op=op, k=k) for l in lines)


def run_function(code, name, args):
    env = {}
    exec(code, env)  # the family's own generated programs only
    try:
        return ("ok", env[name](*args))
    except Exception as e:  # a near-miss may raise; that is a failing test
        return ("error", type(e).__name__)


def make_inputs(rng, k, with_m):
    """Test inputs: short lists of small numbers around k (so k - 1, k, k + 1 occur)."""
    n = rng.randint(3, 7)
    pool = [k - 1, k, k + 1] + list(range(0, 12))
    xs = [rng.choice(pool) for _ in range(n)]
    if with_m:
        return (xs, rng.randint(1, n))
    return (xs,)


def make_problem(rng, tpl, op, k):
    code = render(tpl["lines"], op, k)
    name = tpl["name"]
    misses = []
    cmp_line = tpl["cmp_line"]
    for wrong in WRONG_OP[op]:
        lines = list(tpl["lines"])
        lines[cmp_line] = lines[cmp_line].replace("{op}", wrong)
        misses.append((render(lines, op, k), cmp_line + 1, "compare"))
    for dk in (-1, 1):
        lines = list(tpl["lines"])
        lines[cmp_line] = lines[cmp_line].replace("{k}", str(k + dk))
        misses.append((render(lines, op, k), cmp_line + 1, "bound"))
    for idx, repl, kind in tpl["misses"]:
        lines = list(tpl["lines"])
        lines[idx] = repl
        misses.append((render(lines, op, k), idx + 1, kind))

    # Tests: TESTS_PER_PROBLEM random inputs, then more (up to twice as many, 400 draws)
    # while some near-miss still passes them all; near-misses no test catches are dropped.
    tests, seen = [], set()
    attempts = 0
    while len(tests) < TESTS_PER_PROBLEM or attempts < 400:
        attempts += 1
        args = make_inputs(rng, k, tpl["m"])
        key = repr(args)
        if key in seen:
            continue
        status, want = run_function(code, name, args)
        if status != "ok":
            continue
        caught = [m for m in misses if run_function(m[0], name, args) != ("ok", want)]
        uncaught = [m for m in misses if not any(m[0] in t[2] for t in tests)]
        useful = any(m in caught for m in uncaught)
        if len(tests) < TESTS_PER_PROBLEM or useful:
            seen.add(key)
            tests.append((args, want, {m[0] for m in caught}))
        if len(tests) >= TESTS_PER_PROBLEM and all(any(m[0] in t[2] for t in tests) for m in misses):
            break
        if len(tests) >= 2 * TESTS_PER_PROBLEM:
            break
    kept = [m for m in misses if any(m[0] in t[2] for t in tests)]
    asserts = [f"assert {name}({', '.join(repr(a) for a in args)}) == {want!r}" for args, want, _ in tests]
    text = tpl["text"].format(cond=OPS[op].format(k=k))
    return dict(text=text, code=code, test_list=asserts, misses=kept)


# ---- byte-level BPE -------------------------------------------------------------------------

def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character map (what ByteLevel uses)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


# The GPT-2 split regex restricted to ASCII (the corpus is ASCII): \p{L} -> [A-Za-z], \p{N} -> [0-9].
PRETOKENIZE = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED_PLAIN = ["<think>", "</think>"]


def train_bpe(texts, merges_wanted):
    b2u = bytes_to_unicode()
    words = Counter()
    splitter = re.compile("(" + "|".join(re.escape(s) for s in SPECIAL + ADDED_PLAIN) + ")")
    for t in texts:
        for piece in splitter.split(t):
            if piece in SPECIAL or piece in ADDED_PLAIN or not piece:
                continue
            for w in PRETOKENIZE.findall(piece):
                words[tuple(b2u[b] for b in w.encode("utf-8"))] += 1
    vocab = [b2u[b] for b in range(256)]
    merges = []
    words = dict(words)
    for _ in range(merges_wanted):
        pairs = Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        # Most frequent pair; ties broken by the pair's text so the result is deterministic.
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        if pairs[best] < 2:
            break
        merged = best[0] + best[1]
        merges.append(best)
        vocab.append(merged)
        new_words = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(merged)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            t = tuple(out)
            new_words[t] = new_words.get(t, 0) + c
        words = new_words
    ids = {tok: i for i, tok in enumerate(vocab)}
    added = []
    for content in SPECIAL + ADDED_PLAIN:
        added.append(dict(id=len(ids) + len(added), content=content, single_word=False, lstrip=False,
                          rstrip=False, normalized=False, special=content in SPECIAL))
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                          "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": ids, "merges": [f"{a} {b}" for a, b in merges]},
    }


def completion_of(code):
    return "```python\n" + code + "\n```"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--heldout-fraction", type=float, default=0.2)
    ap.add_argument("--correct-per-problem", type=int, default=2)
    ap.add_argument("--misses-per-problem", type=int, default=2)
    ap.add_argument("--merges", type=int, default=700)
    ap.add_argument("--prompt-prefix", default="Answer with the Python code in one ```python block.\n\n",
                    help="text placed before the statement in the tokenizer's training texts "
                         "(the trainer's prompt.instruction + blank line)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.out_dir, exist_ok=True)

    triples = [(t, op, k) for t in range(len(TEMPLATES)) for op in OPS for k in range(1, 10)]
    rng.shuffle(triples)
    n_held = int(round(len(triples) * args.heldout_fraction))
    splits = {"heldout": triples[:n_held], "train": triples[n_held:]}
    problems = {}
    task_id = 1
    for split in ("train", "heldout"):
        problems[split] = []
        for t, op, k in sorted(splits[split], key=lambda x: (x[0], list(OPS).index(x[1]), x[2])):
            p = make_problem(rng, TEMPLATES[t], op, k)
            p.update(task_id=task_id, template=TEMPLATES[t]["name"], op=op, k=k)
            task_id += 1
            problems[split].append(p)

    for split, ps in problems.items():
        with open(os.path.join(args.out_dir, f"{split}.jsonl"), "w") as f:
            for p in ps:
                f.write(json.dumps(dict(task_id=p["task_id"], text=p["text"], code=p["code"],
                                        test_list=p["test_list"])) + "\n")
    with open(os.path.join(args.out_dir, "near_misses.jsonl"), "w") as f:
        for split, ps in problems.items():
            for p in ps:
                for code, line, kind in p["misses"]:
                    f.write(json.dumps(dict(problem_id=f"mbpp/{p['task_id']}", split=split, program=code,
                                            bug_kind=kind, bug_line=line)) + "\n")

    corpus = []
    for p in problems["train"]:
        for _ in range(args.correct_per_problem):
            corpus.append(dict(task_id=p["task_id"], text=p["text"], completion=completion_of(p["code"]),
                               kind="correct", bug_kind=None, bug_line=None))
        for code, line, kind in rng.sample(p["misses"], min(args.misses_per_problem, len(p["misses"]))):
            corpus.append(dict(task_id=p["task_id"], text=p["text"], completion=completion_of(code),
                               kind="near_miss", bug_kind=kind, bug_line=line))
    rng.shuffle(corpus)
    with open(os.path.join(args.out_dir, "corpus.jsonl"), "w") as f:
        for c in corpus:
            f.write(json.dumps(c) + "\n")

    # The tokenizer sees what the model will: chat-formatted prompts and the completions.
    texts = []
    for c in corpus:
        texts.append("<|im_start|>user\n" + args.prompt_prefix + c["text"] +
                     "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")
        texts.append(c["completion"] + "<|im_end|>")
    tok = train_bpe(texts, args.merges)
    with open(os.path.join(args.out_dir, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False)

    kinds = Counter(m[2] for ps in problems.values() for p in ps for m in p["misses"])
    summary = dict(seed=args.seed, templates=len(TEMPLATES), train_problems=len(problems["train"]),
                   heldout_problems=len(problems["heldout"]), corpus=len(corpus),
                   corpus_near_misses=sum(c["kind"] == "near_miss" for c in corpus),
                   near_misses=sum(kinds.values()), near_miss_kinds=dict(sorted(kinds.items())),
                   tests_per_problem_mean=sum(len(p["test_list"]) for ps in problems.values() for p in ps) /
                   sum(len(ps) for ps in problems.values()),
                   vocab_size=len(tok["model"]["vocab"]) + len(tok["added_tokens"]),
                   correct_per_problem=args.correct_per_problem, misses_per_problem=args.misses_per_problem)
    with open(os.path.join(args.out_dir, "family.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
