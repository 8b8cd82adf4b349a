#!/usr/bin/python3.11
"""Compares egca::cfg's parse verdicts with CPython 3.11's compile().

    build/bench/cfg/cfg_corpus --dump-verdicts /tmp/verdicts.jsonl
    /usr/bin/python3.11 bench/cfg/check_syntax_vs_cpython.py /tmp/verdicts.jsonl

Prints the agreement table and a few disagreements. Run it with Debian's 3.11 (the
interpreter egca embeds) so the grammar is exactly the one the tracer will compile with.
"""
import json
import sys
import warnings

warnings.simplefilter("ignore")  # invalid escape sequences etc. are warnings, not errors


def main(path):
    agree = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    samples = {(True, False): [], (False, True): []}
    reasons = {}  # CPython's message (line info stripped) for programs only egca accepts
    with open(path, encoding="utf-8", newline="\n") as f:
        for line in f:
            v = json.loads(line)
            try:
                compile(v["code"], "<candidate>", "exec", dont_inherit=True)
                cpython = True
            except (SyntaxError, ValueError) as e:  # ValueError: NUL bytes
                cpython = False
                err = f"{type(e).__name__}: {e}"
            key = (v["parsed"], cpython)
            agree[key] += 1
            if key == (True, False):
                r = (key, err.split(" (<candidate>")[0].split(" on line")[0])
                reasons[r] = reasons.get(r, 0) + 1
            if key in samples and len(samples[key]) < 8:
                samples[key].append((v["origin"], v.get("message"), None if cpython else err))
    n = sum(agree.values())
    print(f"programs {n}")
    print(f"both parse        {agree[(True, True)]}")
    print(f"both reject       {agree[(False, False)]}")
    print(f"egca parses, CPython rejects {agree[(True, False)]}")
    print(f"egca rejects, CPython compiles {agree[(False, True)]}")
    print(f"agreement {100.0 * (agree[(True, True)] + agree[(False, False)]) / max(n, 1):.3f}%")
    for (kind, msg), count in sorted(reasons.items(), key=lambda kv: -kv[1])[:15]:
        print(f"  {count:6d}  {kind}: {msg}")
    for key, items in samples.items():
        for origin, msg, err in items:
            print(f"  {key}: {origin}: egca={msg} cpython={err}")


if __name__ == "__main__":
    main(sys.argv[1])
