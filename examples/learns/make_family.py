#!/usr/bin/env python3
"""Generates the `learns` task family from a seed (Python 3 standard library only).

    make_family.py OUT_DIR [--variant v0|v1|v2] [--seed N] [--heldout-fraction F] [--validation-fraction V]
                   [--correct-per-problem C] [--misses-per-problem M] [--merges K]

Variants (issue 23; v0 is the default and writes exactly what this script wrote before
variants existed):
  v0  nine one-loop templates, one comparison against a constant each (below).
  v1  the same problems, tests, references and near-miss catalogue as v0; the corpus
      programs (so what the pre-trained policy samples) vary in ways that do not change
      behaviour: names of the parameter, loop and accumulator variables, an unused
      statement (a length or a counter), the order of that statement and the initialization,
      comment lines and trailing comments, and the comparison extracted into a helper
      function. Each corpus entry draws its own surface from a generator seeded by --seed;
      a near-miss gets the same surface as its correct program would, so it still differs
      from it in exactly one line (its bug_line, counted in the surfaced program).
  v2  longer programs: two helper functions (two v0 templates without the prefix argument,
      each with its own comparison and constant, so two loops) and the asked function that
      calls both and returns the pair; one near-miss in one of the helpers. Held-out
      problems combine held-out triples only.

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
Every kept near-miss fails at least one unit test, checked here by running it
(examples/learns/check_variants.py checks the written files again with egca-batch).
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


def template_misses(tpl, op, k):
    """The near-misses of one template instance: (mutated template lines, 0-based line, kind)."""
    out = []
    cmp_line = tpl["cmp_line"]
    for wrong in WRONG_OP[op]:
        lines = list(tpl["lines"])
        lines[cmp_line] = lines[cmp_line].replace("{op}", wrong)
        out.append((lines, cmp_line, "compare"))
    for dk in (-1, 1):
        lines = list(tpl["lines"])
        lines[cmp_line] = lines[cmp_line].replace("{k}", str(k + dk))
        out.append((lines, cmp_line, "bound"))
    for idx, repl, kind in tpl["misses"]:
        lines = list(tpl["lines"])
        lines[idx] = repl
        out.append((lines, idx, kind))
    return out


def make_tests(rng, code, name, misses, inputs):
    """Tests: TESTS_PER_PROBLEM random inputs, then more (up to twice as many, 400 draws)
    while some near-miss still passes them all; near-misses no test catches are dropped.
    misses: (program, bug_line, kind); inputs(rng) draws one argument tuple."""
    tests, seen = [], set()
    attempts = 0
    while len(tests) < TESTS_PER_PROBLEM or attempts < 400:
        attempts += 1
        args = inputs(rng)
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
    return asserts, kept


def make_problem(rng, tpl, op, k):
    code = render(tpl["lines"], op, k)
    misses = [(render(lines, op, k), idx + 1, kind) for lines, idx, kind in template_misses(tpl, op, k)]
    asserts, kept = make_tests(rng, code, tpl["name"], misses, lambda r: make_inputs(r, k, tpl["m"]))
    text = tpl["text"].format(cond=OPS[op].format(k=k))
    return dict(text=text, code=code, test_list=asserts, misses=kept)


# ---- v1: surface variation that does not change behaviour ---------------------------------

# Identifiers of the canonical programs and what v1 may call them instead (first: canonical).
RENAMES = {
    "xs": ["xs", "nums", "values", "data", "seq", "arr"],
    "x": ["x", "v", "num", "val", "elem", "y"],
    "i": ["i", "j", "pos", "t"],
    "n": ["n", "count", "cnt", "hits"],
    "s": ["s", "total", "acc"],
    "out": ["out", "res", "kept", "picked"],
    "idx": ["idx", "where", "ans", "found"],
    "best": ["best", "top", "biggest", "cur"],
    "m": ["m", "limit", "upto"],
}
RENAME_RE = re.compile(r"\b(" + "|".join(sorted(RENAMES, key=len, reverse=True)) + r")\b")
DISTRACTOR_NAMES = ["size", "steps", "seen", "length", "scanned"]
HELPER_NAMES = ["ok", "good", "wanted", "fits", "check", "keep"]
HELPER_ARGS = ["a", "z", "value", "q"]
COMMENTS = ["go through the list", "look at each number", "check the numbers one by one",
            "the running result", "scan every value"]
CMP_RE = re.compile(r"(xs\[i\]|\bx\b) (>=|<=|==|!=|>|<) (-?\d+)")


def surface_plan(rng):
    """One random surface; every choice is drawn, in a fixed order, whether used or not."""
    return dict(names={k: rng.choice(v) for k, v in RENAMES.items()},
                helper=rng.random() < 0.35, helper_name=rng.choice(HELPER_NAMES),
                helper_arg=rng.choice(HELPER_ARGS),
                distractor=rng.choice([None, "len", "counter"]), distractor_name=rng.choice(DISTRACTOR_NAMES),
                distractor_first=rng.random() < 0.5,
                comment=rng.choice([None] + COMMENTS), loop_comment=rng.choice([None, None] + COMMENTS))


def apply_surface(code, plan):
    """The program code (a canonical v0 program or one of its near-misses) with the plan's
    surface. Behaviour is unchanged: only names, unused statements, comments and the
    comparison moved into a helper."""
    lines = code.split("\n")
    helper = []
    if plan["helper"]:
        for i, l in enumerate(lines):
            m = CMP_RE.search(l)
            if m and l.lstrip().startswith("if "):
                a = plan["helper_arg"]
                helper = [f"def {plan['helper_name']}({a}):", f"    return {a} {m.group(2)} {m.group(3)}", ""]
                lines[i] = l[:m.start()] + f"{plan['helper_name']}({m.group(1)})" + l[m.end():]
                break
    names = plan["names"]
    lines = [RENAME_RE.sub(lambda mm: names[mm.group(1)], l) for l in lines]
    head, body = lines[0], lines[1:]
    has_init = bool(body) and not body[0].lstrip().startswith(("for ", "if ", "return "))
    d = plan["distractor_name"]
    if plan["distractor"] is not None:
        stmt = f"    {d} = len({names['xs']})" if plan["distractor"] == "len" else f"    {d} = 0"
        body.insert(1 if has_init and not plan["distractor_first"] else 0, stmt)
        if plan["distractor"] == "counter":
            for i, l in enumerate(body):
                if l.lstrip().startswith("for "):
                    indent = len(l) - len(l.lstrip()) + 4
                    body.insert(i + 1, " " * indent + f"{d} += 1")
                    break
    if plan["loop_comment"]:
        for i, l in enumerate(body):
            if l.lstrip().startswith("for "):
                body[i] = l + f"  # {plan['loop_comment']}"
                break
    if plan["comment"]:
        body.insert(0, f"    # {plan['comment']}")
    return "\n".join(helper + [head] + body)


def surfaced_pair(code, miss, plan):
    """(surfaced correct program, surfaced near-miss, 1-based line where they differ)."""
    a, b = apply_surface(code, plan), apply_surface(miss, plan)
    la, lb = a.split("\n"), b.split("\n")
    diff = [i for i, (x, y) in enumerate(zip(la, lb)) if x != y]
    assert len(la) == len(lb) and len(diff) == 1, (code, miss, plan)
    return a, b, diff[0] + 1


# ---- v2: two helpers and the asked function ------------------------------------------------


def describe(tpl, op, k):
    """The template's statement after 'that returns ' (without the final period)."""
    t = tpl["text"].format(cond=OPS[op].format(k=k))
    return t.split(" that returns ", 1)[1].rstrip(".")


def make_composite(rng, a, b):
    """a, b: (template, op, k) with different templates. The asked function returns the
    pair of the two helpers' results; near-misses are every single-line bug of either helper."""
    (ta, opa, ka), (tb, opb, kb) = a, b
    name = f"{ta['name']}_and_{tb['name']}"
    main = [f"def {name}(xs):", f"    a = {ta['name']}(xs)", f"    b = {tb['name']}(xs)", "    return (a, b)"]
    la, lb = render(ta["lines"], opa, ka).split("\n"), render(tb["lines"], opb, kb).split("\n")
    code = "\n".join(la + [""] + lb + [""] + main)
    misses = []
    for lines, idx, kind in template_misses(ta, opa, ka):
        misses.append(("\n".join(render(lines, opa, ka).split("\n") + [""] + lb + [""] + main), idx + 1, kind))
    off = len(la) + 1
    for lines, idx, kind in template_misses(tb, opb, kb):
        misses.append(("\n".join(la + [""] + render(lines, opb, kb).split("\n") + [""] + main), off + idx + 1, kind))
    ks = sorted({ka, kb})

    def inputs(r):
        n = r.randint(4, 8)
        pool = [x for k in ks for x in (k - 1, k, k + 1)] + list(range(0, 12))
        return ([r.choice(pool) for _ in range(n)],)

    asserts, kept = make_tests(rng, code, name, misses, inputs)
    text = (f"Write a function {name}(xs) that returns a tuple of two values: first, {describe(ta, opa, ka)}; "
            f"second, {describe(tb, opb, kb)}. Write them as helper functions {ta['name']}(xs) and "
            f"{tb['name']}(xs) and call both.")
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
    ap.add_argument("--variant", default="v0", help="v0 (default), v1 or v2 (see the top of this file)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--heldout-fraction", type=float, default=0.2)
    ap.add_argument("--validation-fraction", type=float, default=0.0,
                    help="share of the training triples moved to validation.jsonl (tuning runs "
                         "score on it; not in the corpus). 0 (default): no validation split")
    ap.add_argument("--correct-per-problem", type=int, default=2)
    ap.add_argument("--misses-per-problem", type=int, default=2)
    ap.add_argument("--merges", type=int, default=700)
    ap.add_argument("--prompt-prefix", default="Answer with the Python code in one ```python block.\n\n",
                    help="text placed before the statement in the tokenizer's training texts "
                         "(the trainer's prompt.instruction + blank line)")
    args = ap.parse_args()
    if args.variant not in ("v0", "v1", "v2"):
        ap.error(f"--variant {args.variant}: expected v0, v1 or v2")
    rng = random.Random(args.seed)
    # v1's surfaces come from their own stream so that v1's problems, tests and corpus choice
    # are v0's exactly.
    surface_rng = random.Random(f"{args.seed}/surface")
    os.makedirs(args.out_dir, exist_ok=True)

    triples = [(t, op, k) for t in range(len(TEMPLATES)) for op in OPS for k in range(1, 10)]
    rng.shuffle(triples)
    n_held = int(round(len(triples) * args.heldout_fraction))
    splits = {"heldout": triples[:n_held], "train": triples[n_held:]}
    if not 0.0 <= args.validation_fraction < 1.0:
        ap.error(f"--validation-fraction {args.validation_fraction}: expected a value in [0, 1)")
    if args.validation_fraction > 0:
        n_val = int(round(len(splits["train"]) * args.validation_fraction))
        splits["validation"] = splits["train"][:n_val]
        splits["train"] = splits["train"][n_val:]
    problems = {}
    task_id = 1
    for split in [x for x in ("train", "heldout", "validation") if x in splits]:
        problems[split] = []
        ordered = sorted(splits[split], key=lambda x: (x[0], list(OPS).index(x[1]), x[2]))
        if args.variant == "v2":
            ordered = [x for x in ordered if not TEMPLATES[x[0]]["m"]]
        for t, op, k in ordered:
            if args.variant == "v2":
                # The partner: another triple of the same split, from another template.
                t2, op2, k2 = rng.choice([x for x in ordered if x[0] != t])
                p = make_composite(rng, (TEMPLATES[t], op, k), (TEMPLATES[t2], op2, k2))
                p.update(task_id=task_id, template=f"{TEMPLATES[t]['name']}+{TEMPLATES[t2]['name']}",
                         op=f"{op},{op2}", k=f"{k},{k2}")
            else:
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
            code = p["code"]
            if args.variant == "v1":
                code = apply_surface(code, surface_plan(surface_rng))
            corpus.append(dict(task_id=p["task_id"], text=p["text"], completion=completion_of(code),
                               kind="correct", bug_kind=None, bug_line=None))
        for code, line, kind in rng.sample(p["misses"], min(args.misses_per_problem, len(p["misses"]))):
            if args.variant == "v1":
                _, code, line = surfaced_pair(p["code"], code, surface_plan(surface_rng))
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
    if "validation" in problems:
        summary["validation_problems"] = len(problems["validation"])
    if args.variant != "v0":  # v0's family.json stays what it was before variants existed
        completions = [c["completion"] for c in corpus]
        summary.update(variant=args.variant,
                       corpus_distinct_completions=len(set(completions)),
                       corpus_lines_mean=sum(c.count("\n") - 1 for c in completions) / len(completions),
                       corpus_chars_max=max(len(c) for c in completions))
    with open(os.path.join(args.out_dir, "family.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
