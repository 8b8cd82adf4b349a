#!/usr/bin/python3
"""What localized credit did to a run's samples, from its dumped rollouts (standard library).

    rollout_diagnostics.py RUN_DIR [RUN_DIR ...] [--out FILE]

Reads RUN_DIR/rollouts/step-*.jsonl (`run.dump_rollouts: true`) and counts, per run and
pooled:
- samples by failure mode;
- LOGIC samples, those whose credit was localized, and among those the ones with a positive,
  zero and negative advantage. Under a partial-credit reward (fraction of tests passed) a
  failing LOGIC sample can beat its group's mean; a localizing target then puts that
  positive advantage on its divergent span, i.e. on the bug (docs/results/credit-study);
- of the positive ones, how many sit in a group that also holds a SYNTAX or CONSTRAINT
  failure (the usual reason they beat the mean);
- the mean number of tokens the earliest span covers and the mean tokens per sample, over
  localized LOGIC samples (their ratio is the renormalized operator's per-token boost);
- SYNTAX samples by reason ("raises NameError at run time", "does not compile", ...).

Prints a table; --out writes the same numbers as JSON. Exit 2 on a missing run directory or
one without rollouts; a malformed line is reported on stderr and skipped.
"""
import argparse
import collections
import glob
import json
import os
import sys

COUNTS = ("samples", "logic", "localized", "positive", "zero", "negative", "positive_mixed_group",
          "span_tokens", "tokens")


def span_tokens(sample):
    """Tokens that overlap the sample's earliest span (byte ranges relative to the program,
    shifted by code_offset into the completion)."""
    span = (sample.get("spans") or {}).get("earliest")
    if not span:
        return 0
    off = sample.get("code_offset", 0)
    begin, end = span["begin"] + off, span["end"] + off
    return sum(1 for t in sample.get("tokens", []) if t[1] < end and t[2] > begin)


def diagnose(run_dir, warn):
    files = sorted(glob.glob(os.path.join(run_dir, "rollouts", "step-*.jsonl")))
    if not files:
        return None
    c = collections.Counter()
    modes = collections.Counter()
    syntax = collections.Counter()
    for path in files:
        groups = collections.defaultdict(list)
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                    groups[(r.get("step"), r["group"])].append(r)
                except (ValueError, KeyError, TypeError) as e:
                    warn(f"{path}:{n}: skipped ({e})")
        for rows in groups.values():
            mixed = any(x.get("mode") in ("SYNTAX", "CONSTRAINT") for x in rows)
            for r in rows:
                c["samples"] += 1
                modes[r.get("mode", "?")] += 1
                if r.get("mode") == "SYNTAX":
                    syntax[r.get("reason", "?")] += 1
                if r.get("mode") != "LOGIC":
                    continue
                c["logic"] += 1
                if r.get("credit") != "localized":
                    continue
                c["localized"] += 1
                a = r.get("advantage", 0.0)
                c["positive" if a > 0 else "zero" if a == 0 else "negative"] += 1
                if a > 0 and mixed:
                    c["positive_mixed_group"] += 1
                c["span_tokens"] += span_tokens(r)
                c["tokens"] += len(r.get("tokens", []))
    return dict(counts={k: c[k] for k in COUNTS}, modes=dict(modes), syntax_reasons=dict(syntax.most_common()))


def summary(counts):
    loc = counts["localized"]
    return dict(positive_share=counts["positive"] / loc if loc else None,
                span_tokens_mean=counts["span_tokens"] / loc if loc else None,
                tokens_mean=counts["tokens"] / loc if loc else None)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", nargs="+")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)

    def warn(msg):
        print(f"rollout_diagnostics.py: {msg}", file=sys.stderr)

    result = dict(runs={}, pooled={})
    pooled = collections.Counter()
    modes, syntax = collections.Counter(), collections.Counter()
    for d in a.run_dirs:
        if not os.path.isdir(d):
            warn(f"{d}: not a directory")
            return 2
        r = diagnose(d, warn)
        if r is None:
            warn(f"{d}: no rollouts/step-*.jsonl (was the run made with run.dump_rollouts: true?)")
            return 2
        r.update(summary(r["counts"]))
        result["runs"][d] = r
        pooled.update(r["counts"])
        modes.update(r["modes"])
        syntax.update(r["syntax_reasons"])
    counts = {k: pooled[k] for k in COUNTS}
    result["pooled"] = dict(counts=counts, modes=dict(modes), syntax_reasons=dict(syntax.most_common()),
                            **summary(counts))
    print("| run | samples | LOGIC | localized | advantage > 0 | of those, group has SYNTAX/CONSTRAINT "
          "| span tokens / sample tokens |")
    print("|---|---|---|---|---|---|---|")
    rows = list(result["runs"].items()) + [("pooled", result["pooled"])]
    for name, r in rows:
        k = r["counts"]
        share = f"{k['positive']} ({100 * r['positive_share']:.1f}%)" if r["positive_share"] is not None else "0"
        toks = f"{r['span_tokens_mean']:.1f} / {r['tokens_mean']:.1f}" if r["span_tokens_mean"] is not None else "-"
        print(f"| {name} | {k['samples']} | {k['logic']} | {k['localized']} | {share} "
              f"| {k['positive_mixed_group']} | {toks} |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
