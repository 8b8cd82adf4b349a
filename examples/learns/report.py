#!/usr/bin/env python3
"""Writes the learns experiment's report from its run directories (standard library only).

    report.py OUT_DIR --pretrained DIR [--elapsed SECONDS] [--command TEXT] [--reach-gains G1,G2]

Reads OUT_DIR/family (family.json, near_misses.jsonl), the pre-trained checkpoint's
pretrain.json, OUT_DIR/runs/start-s<seed> (the starting point: lr 0, one step, evaluated)
and OUT_DIR/runs/<target>-s<seed> (GRPO runs). Writes OUT_DIR/report.md, OUT_DIR/pass_at_1.svg
and OUT_DIR/summary.json.

pass@1 is the evaluation's sampled pass@1 on the held-out split (kind "eval" in metrics.jsonl,
the unbiased estimator over eval.samples completions per problem). Localization accuracy:
among LOGIC samples whose program is exactly a catalogued near-miss of its problem, the
fraction whose span (earliest, last, random boundary) covers the near-miss's bug line.
"""
import argparse
import glob
import json
import math
import os
import re
from collections import defaultdict

TARGETS = ["uniform", "earliest", "last", "random"]
COLORS = {"uniform": "#444444", "earliest": "#d62728", "last": "#1f77b4", "random": "#2ca02c"}
MODES = ["syntax", "constraint", "logic", "correct"]


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def mean_std(xs):
    if not xs:
        return (float("nan"), float("nan"))
    m = sum(xs) / len(xs)
    return (m, math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs)))


def fmt(x, digits=3):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def load_runs(out_dir):
    """{name: {"target", "seed", "train": [...], "eval": [...], "dir"}} for every run."""
    runs = {}
    for d in sorted(glob.glob(os.path.join(out_dir, "runs", "*-s*"))):
        m = re.match(r"(.+)-s(\d+)$", os.path.basename(d))
        metrics = os.path.join(d, "metrics.jsonl")
        if not m or not os.path.exists(metrics):
            continue
        rows = read_jsonl(metrics)
        runs[os.path.basename(d)] = dict(target=m.group(1), seed=int(m.group(2)), dir=d,
                                         train=[r for r in rows if r.get("kind") == "train"],
                                         eval=[r for r in rows if r.get("kind") == "eval"])
    return runs


def localization(run_dirs, near_misses):
    """Counts over every dumped rollout (RUN_DIR/rollouts/step-*.jsonl) of the given run
    directories: LOGIC samples that are exactly a catalogued near-miss of their problem, and
    how often each span (earliest, last, random) covers its bug line ("hits") or is absent
    ("missing"); by_kind: bug kind -> [earliest hits, matched]. Also study.py's, per run."""
    catalogue = {(m["problem_id"], m["program"].rstrip()): m for m in near_misses}
    stats = dict(logic=0, matched=0, hits={"earliest": 0, "last": 0, "random": 0},
                 missing={"earliest": 0, "last": 0, "random": 0}, by_kind=defaultdict(lambda: [0, 0]))
    for run_dir in run_dirs:
        for path in glob.glob(os.path.join(run_dir, "rollouts", "step-*.jsonl")):
            for r in read_jsonl(path):
                if r.get("mode") != "LOGIC":
                    continue
                stats["logic"] += 1
                known = catalogue.get((r["problem_id"], r["program"].rstrip()))
                if known is None:
                    continue
                stats["matched"] += 1
                for which in ("earliest", "last", "random"):
                    span = (r.get("spans") or {}).get(which)
                    if span is None:
                        stats["missing"][which] += 1
                        continue
                    hit = span["line"] <= known["bug_line"] <= span["end_line"]
                    stats["hits"][which] += hit
                    if which == "earliest":
                        stats["by_kind"][known["bug_kind"]][0] += hit
                stats["by_kind"][known["bug_kind"]][1] += 1
    return stats


def svg_plot(curves, path, reaches):
    """curves: {target: [(step, mean, std)]}; one line per target with a +-std band."""
    w, h, left, right, top, bottom = 720, 420, 60, 150, 20, 50
    pts = [p for c in curves.values() for p in c]
    if not pts:
        return
    xmax = max(p[0] for p in pts) or 1
    lo = min(p[1] - p[2] for p in pts)
    hi = max(p[1] + p[2] for p in pts)
    lo, hi = math.floor(min([lo] + reaches) * 20) / 20, math.ceil(max([hi] + reaches) * 20) / 20
    if hi <= lo:
        hi = lo + 0.05
    X = lambda s: left + (w - left - right) * s / xmax
    Y = lambda v: top + (h - top - bottom) * (1 - (v - lo) / (hi - lo))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>']
    steps = sorted({p[0] for p in pts})
    for s in steps:
        out.append(f'<line x1="{X(s):.1f}" y1="{Y(lo):.1f}" x2="{X(s):.1f}" y2="{Y(hi):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{X(s):.1f}" y="{h - bottom + 16}" text-anchor="middle">{s}</text>')
    ticks = 5
    for i in range(ticks + 1):
        v = lo + (hi - lo) * i / ticks
        out.append(f'<line x1="{left}" y1="{Y(v):.1f}" x2="{w - right}" y2="{Y(v):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
    for reach in reaches:
        out.append(f'<line x1="{left}" y1="{Y(reach):.1f}" x2="{w - right}" y2="{Y(reach):.1f}" '
                   f'stroke="#999" stroke-dasharray="4,4"/>')
        out.append(f'<text x="{w - right + 4}" y="{Y(reach) + 4:.1f}" fill="#999">target {reach:.3f}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{w - left - right}" height="{h - top - bottom}" '
               f'fill="none" stroke="#333"/>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">GRPO step</text>')
    out.append(f'<text transform="translate(16,{(top + h - bottom) / 2}) rotate(-90)" '
               f'text-anchor="middle">held-out pass@1</text>')
    for i, (target, c) in enumerate(curves.items()):
        color = COLORS.get(target, "#000")
        if len(c) > 1:
            band = [f"{X(s):.1f},{Y(m + d):.1f}" for s, m, d in c] + \
                   [f"{X(s):.1f},{Y(m - d):.1f}" for s, m, d in reversed(c)]
            out.append(f'<polygon points="{" ".join(band)}" fill="{color}" fill-opacity="0.12" stroke="none"/>')
        line = " ".join(f"{X(s):.1f},{Y(m):.1f}" for s, m, _ in c)
        out.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="2"/>')
        for s, m, _ in c:
            out.append(f'<circle cx="{X(s):.1f}" cy="{Y(m):.1f}" r="3" fill="{color}"/>')
        ly = top + 16 + 18 * i
        out.append(f'<line x1="{w - right + 10}" y1="{ly}" x2="{w - right + 30}" y2="{ly}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{w - right + 36}" y="{ly + 4}">{target}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--pretrained", required=True)
    ap.add_argument("--elapsed", type=float, default=float("nan"))
    ap.add_argument("--command", default="examples/learns/run.sh")
    ap.add_argument("--reach-gains", default="0.05,0.10",
                    help="target pass rates: the starting pass@1 plus each of these")
    args = ap.parse_args()
    out = args.out_dir
    family = json.load(open(os.path.join(out, "family", "family.json")))
    pretrain = json.load(open(os.path.join(args.pretrained, "pretrain.json")))
    near_misses = read_jsonl(os.path.join(out, "family", "near_misses.jsonl"))
    runs = load_runs(out)

    # Starting point: evaluation of the lr-0 run, and the modes of its first (only) step.
    starts = [r for r in runs.values() if r["target"] == "start"]
    start_pass = [r["eval"][-1]["pass@1"] for r in starts if r["eval"]]
    start_modes = {m: [r["train"][0][f"mode/{m}"] for r in starts if r["train"]] for m in MODES}
    start_train_pass = [r["train"][0]["pass_all_tests"] for r in starts if r["train"]]
    start_mean = mean_std(start_pass)[0]
    gains = [float(g) for g in args.reach_gains.split(",")]
    reaches = [start_mean + g for g in gains]

    targets = [t for t in TARGETS if any(r["target"] == t for r in runs.values())]
    per_target = {}
    curves = {}
    for t in targets:
        rs = sorted((r for r in runs.values() if r["target"] == t), key=lambda r: r["seed"])
        by_step = defaultdict(list)
        for r in rs:
            start = next((s["eval"][-1]["pass@1"] for s in starts if s["seed"] == r["seed"] and s["eval"]), None)
            if start is not None:
                by_step[0].append(start)
            for e in r["eval"]:
                by_step[e["step"]].append(e["pass@1"])
        curves[t] = [(s, *mean_std(v)) for s, v in sorted(by_step.items())]
        # Per target pass rate, per seed: the first evaluation step at or above it.
        reached = [[next((e["step"] for e in r["eval"] if e["pass@1"] >= reach), None) for r in rs]
                   for reach in reaches]
        finals = [r["eval"][-1]["pass@1"] for r in rs if r["eval"]]
        # Mode fractions in windows of the run (first, middle, last third of the steps).
        windows = []
        n_steps = max((len(r["train"]) for r in rs), default=0)
        bounds = [0, math.ceil(n_steps / 3), math.ceil(2 * n_steps / 3), n_steps]
        for a, b in zip(bounds, bounds[1:]):
            if b <= a:
                continue
            rows = [row for r in rs for row in r["train"] if a < row["step"] <= b]
            windows.append(dict(steps=f"{a + 1}-{b}", **{m: mean_std([row[f"mode/{m}"] for row in rows])[0]
                                                          for m in MODES},
                                reward=mean_std([row["reward"] for row in rows])[0]))
        per_target[t] = dict(seeds=[r["seed"] for r in rs], final=finals, final_mean=mean_std(finals)[0],
                             final_std=mean_std(finals)[1], steps_to_reach=reached,
                             per_seed_curves={r["seed"]: [(e["step"], e["pass@1"]) for e in r["eval"]] for r in rs},
                             modes=windows,
                             seconds=sum(row.get("time/step", 0) for r in rs for row in r["train"]) / max(1, len(rs)))

    loc = localization([r["dir"] for r in runs.values()], near_misses)
    svg_plot(curves, os.path.join(out, "pass_at_1.svg"), reaches)

    cfg_path = next((os.path.join(r["dir"], "config.yaml") for r in runs.values() if r["target"] != "start"), None)
    cfg = open(cfg_path).read() if cfg_path else ""
    key = lambda k: (re.search(rf"^\s*{k}:\s*(.*?)\s*(?:#.*)?$", cfg, re.M) or [None, "?"])[1]
    n_steps = max((len(r["train"]) for r in runs.values() if r["target"] != "start"), default=0)

    md = [f"# learns: localized credit against uniform GRPO\n",
          f"Command: `{args.command}` (wall time {fmt(args.elapsed / 60, 1)} min).\n",
          "## Set-up\n",
          f"- Family (seed {family['seed']}): {family['templates']} templates, {family['train_problems']} train / "
          f"{family['heldout_problems']} held-out problems (disjoint template x comparison x constant triples), "
          f"{family['tests_per_problem_mean']:.1f} tests per problem; {family['near_misses']} catalogued near-misses "
          f"{family['near_miss_kinds']}.",
          f"- Corpus: {family['corpus']} completions, {family['corpus_near_misses']} of them near-misses "
          f"({family['correct_per_problem']} correct + {family['misses_per_problem']} near-misses per train problem); "
          f"byte-level BPE tokenizer of {family['vocab_size']} tokens.",
          f"- Pre-trained policy: Qwen3 layout, {pretrain['parameters']} parameters (hidden {pretrain['hidden']}, "
          f"{pretrain['layers']} layers, vocab {pretrain['vocab']}), {pretrain['steps']} steps x {pretrain['batch']} "
          f"examples, lr {pretrain['lr']}, seed {pretrain['seed']}, final loss {pretrain['final_loss']:.4f}, "
          f"{pretrain['seconds']:.0f} s.",
          f"- GRPO (egca-train, examples/learns/learns.yaml): {n_steps} steps, G = {key('group_size')}, "
          f"{key('prompts_per_step')} prompts per step, lr {key('lr')}, beta {key('beta')}, "
          f"temperature {key('temperature')}, soft_weight {key('soft_weight')}; evaluation every "
          f"{key('eval_every')} steps on {key('eval_limit')} held-out problems, pass@1 from "
          f"{key('samples')} samples at temperature {key('temperature')}.\n",
          "## Starting point (the pre-trained policy)\n",
          f"Seeds {[r['seed'] for r in starts]}: held-out pass@1 {fmt(start_mean)} +- {fmt(mean_std(start_pass)[1])} "
          f"(per seed {[round(x, 3) for x in start_pass]}); on the train prompts of step 1: pass "
          f"{fmt(mean_std(start_train_pass)[0])}, modes "
          + ", ".join(f"{m.upper()} {fmt(mean_std(v)[0], 2)}" for m, v in start_modes.items()) + ".\n",
          "## Held-out pass@1\n",
          "![pass@1 per step](pass_at_1.svg)\n",
          "Target pass rates (dashed): " + ", ".join(f"starting pass@1 + {g} = {fmt(r)}" for g, r in zip(gains, reaches))
          + ". Steps to reach: the first evaluation step at or above it, per seed.\n",
          "| target | final pass@1 mean | std | per seed | " +
          " | ".join(f"steps to reach {fmt(r)}" for r in reaches) + " |",
          "|---|---|---|---|" + "---|" * len(reaches)]
    for t, p in per_target.items():
        md.append(f"| {t} | {fmt(p['final_mean'])} | {fmt(p['final_std'])} | "
                  f"{', '.join(f'{x:.3f}' for x in p['final'])} | "
                  + " | ".join(", ".join("not reached" if s is None else str(s) for s in per_seed)
                               for per_seed in p["steps_to_reach"]) + " |")
    md += ["", "Mean pass@1 per evaluation step (step 0 = starting point):\n",
           "| step | " + " | ".join(per_target) + " |", "|---" * (len(per_target) + 1) + "|"]
    all_steps = sorted({s for c in curves.values() for s, _, _ in c})
    for s in all_steps:
        row = [next((f"{m:.3f} +- {d:.3f}" for st, m, d in curves[t] if st == s), "") for t in per_target]
        md.append(f"| {s} | " + " | ".join(row) + " |")
    md += ["", "## Failure modes over training (train prompts, mean over seeds)\n",
           "| target | steps | SYNTAX | CONSTRAINT | LOGIC | CORRECT | reward |", "|---|---|---|---|---|---|---|"]
    for t, p in per_target.items():
        for wdw in p["modes"]:
            md.append(f"| {t} | {wdw['steps']} | " + " | ".join(fmt(wdw[m], 2) for m in MODES) +
                      f" | {fmt(wdw['reward'], 3)} |")
    m = loc["matched"]
    md += ["", "## Localization on the family\n",
           f"Over every rollout of every run: {loc['logic']} LOGIC samples, {m} of them exactly a catalogued "
           f"near-miss of their problem (known bug line).\n",
           "| span | covers the bug line | no span |", "|---|---|---|"]
    for which in ("earliest", "last", "random"):
        md.append(f"| {which} | {fmt(loc['hits'][which] / m if m else float('nan'))} ({loc['hits'][which]}/{m}) | "
                  f"{loc['missing'][which]} |")
    md += ["", "Earliest divergence by bug kind:\n", "| bug kind | covers the bug line |", "|---|---|"]
    for kind, (hit, n) in sorted(loc["by_kind"].items()):
        md.append(f"| {kind} | {fmt(hit / n if n else float('nan'))} ({hit}/{n}) |")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    summary = dict(command=args.command, elapsed_seconds=args.elapsed, family=family,
                   pretrain={k: v for k, v in pretrain.items() if k != "loss_curve"},
                   start=dict(seeds=[r["seed"] for r in starts], heldout_pass_at_1=start_pass,
                              train_pass=start_train_pass, modes=start_modes),
                   reach=reaches, targets=per_target,
                   localization=dict(logic=loc["logic"], matched=m, hits=loc["hits"], missing=loc["missing"],
                                     earliest_by_kind={k: v for k, v in loc["by_kind"].items()}))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print("\n".join(md[md.index("## Held-out pass@1\n"):]))


if __name__ == "__main__":
    main()
