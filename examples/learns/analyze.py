#!/usr/bin/python3
"""Analysis of the credit study (issue 23): numpy and the Python standard library only.

    analyze.py RUNS_DIR [--out DIR] [--baseline uniform] [--primary earliest]
               [--resamples 10000] [--rng-seed 0]

RUNS_DIR holds one small JSON file per run (what the study driver writes under
docs/results/credit-study/runs/), any file name ending in .json:

    {"variant": "v0", "arm": "earliest", "seed": 3,
     "evals": [{"step": 0,   "problems": {"12": [5, 24], "40": [0, 24], ...}},
               {"step": 50,  "problems": {...}},
               {"step": 100, "problems": {...}}]}

"problems" maps a held-out problem id to [samples passed, samples drawn]. The shared start of
a seed is a file with "arm": "start" and one evaluation at step 0; runs without a step-0
evaluation of their own get it. pass@1 of an evaluation is the mean over problems of
passed / drawn (every problem weighs the same).

Writes into --out (default RUNS_DIR/..): analysis.json (every number below) and
analysis.md (tables), and pass_at_1_<variant>.svg (held-out pass@1 against step, one curve per
arm, mean over seeds with a 95% stratified bootstrap band).

Per variant and arm, on final pass@1 over seeds: mean, interquartile mean (IQM: the mean of
the middle 50% of the sorted scores, 25% cut from each end as scipy.stats.trim_mean(x, 0.25)
does), 95% percentile bootstrap intervals of both (seeds resampled with replacement within
the variant), and the probability of improvement over the baseline arm (the chance that a
run of the arm scores above a run of the baseline, ties counting half). Per arm against the
baseline, paired by seed: the mean paired difference, its bootstrap interval, the paired t
interval, the per-problem paired difference with a problem-clustered standard error, how
many problems the contrast is ahead on, behind on or even (the per-problem mean over seeds
beyond +-0.005), and the minimum difference the design detects at 80% power (alpha 0.05,
two-sided) from the measured variance of the paired differences, split into the part evaluation noise explains
and the rest.
"""
import argparse
import glob
import json
import math
import os
import sys

import numpy as np

# ---- Student t (no scipy): CDF from the regularized incomplete beta, quantile by bisection ---


def _betacf(a, b, x):
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1.0 - x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t, df):
    if math.isinf(df):
        return 0.5 * (1.0 + math.erf(t / math.sqrt(2.0)))
    x = df / (df + t * t)
    tail = 0.5 * betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t > 0 else tail


def t_quantile(p, df):
    """The p-quantile of Student's t with df degrees of freedom (df = inf: the normal)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must lie in (0, 1)")
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


# ---- statistics ---------------------------------------------------------------------------


def iqm(x):
    """Interquartile mean: 25% cut from each end of the sorted values (scipy's trim_mean)."""
    x = np.sort(np.asarray(x, dtype=float))
    n = len(x)
    cut = int(0.25 * n)
    return float(np.mean(x[cut:n - cut]))


def bootstrap_ci(strata, statistic, resamples=10000, rng_seed=0, level=0.95):
    """Stratified percentile bootstrap: each stratum (a list of values, or of rows) is
    resampled with replacement to its own size; statistic gets the concatenation."""
    rng = np.random.default_rng(rng_seed)
    strata = [np.asarray(s, dtype=float) for s in strata]
    stats = np.empty(resamples)
    for r in range(resamples):
        parts = [s[rng.integers(0, len(s), len(s))] for s in strata]
        stats[r] = statistic(np.concatenate(parts))
    a = (1.0 - level) / 2.0
    return float(np.quantile(stats, a)), float(np.quantile(stats, 1.0 - a))


def probability_of_improvement(x, y):
    """P(X > Y) + 0.5 P(X = Y) over all pairs of a run of x and a run of y."""
    x = np.asarray(x, dtype=float)[:, None]
    y = np.asarray(y, dtype=float)[None, :]
    return float(np.mean((x > y) + 0.5 * (x == y)))


def sign_flip_p(d):
    """Exact two-sided sign-flip (paired permutation) test of mean(d) = 0: the share of the
    2^n sign patterns whose |mean| is at least the observed one (issue 37; n <= 20)."""
    d = np.asarray(d, dtype=float)
    n = len(d)
    if n == 0 or n > 20:
        raise ValueError(f"sign_flip_p: n = {n} (1..20 differences)")
    signs = 1.0 - 2.0 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
    means = np.abs(signs @ d) / n
    return float(np.mean(means >= abs(d.mean()) - 1e-12))


def clustered_mean_se(values, clusters):
    """Mean of the observations and its cluster-robust standard error:
    SE^2 = sum_c (sum_{i in c} (x_i - mean))^2 / n^2 (no small-sample correction)."""
    values = np.asarray(values, dtype=float)
    clusters = np.asarray(clusters)
    mean = float(values.mean())
    total = 0.0
    for c in np.unique(clusters):
        total += float(np.sum(values[clusters == c] - mean)) ** 2
    return mean, math.sqrt(total) / len(values)


def problem_direction(values, clusters, threshold=0.005):
    """How many problems the contrast favours: per problem (cluster) the mean of its paired
    differences over seeds; counted as ahead (> threshold), behind (< -threshold) or even."""
    values = np.asarray(values, dtype=float)
    clusters = np.asarray(clusters)
    means = [float(values[clusters == c].mean()) for c in np.unique(clusters)]
    ahead = sum(1 for m in means if m > threshold)
    behind = sum(1 for m in means if m < -threshold)
    return dict(ahead=ahead, behind=behind, even=len(means) - ahead - behind, threshold=threshold)


def eval_variance(problems):
    """Sampling variance of one evaluation's pass@1 (mean over problems of passed/drawn):
    sum_j p_j (1 - p_j) / (k_j - 1) / N^2, with the unbiased per-problem variance."""
    n = len(problems)
    total = 0.0
    for passed, drawn in problems.values():
        if drawn > 1:
            p = passed / drawn
            total += p * (1.0 - p) / (drawn - 1)
    return total / (n * n)


def power_multiplier(seeds, alpha=0.05, power=0.8):
    df = seeds - 1
    return t_quantile(1.0 - alpha / 2.0, df) + t_quantile(power, df)


def minimum_detectable_difference(sd, seeds, alpha=0.05, power=0.8):
    """Smallest true mean paired difference a two-sided paired t-test at alpha detects with
    the given power (normal approximation with t quantiles), for paired SD sd."""
    return power_multiplier(seeds, alpha, power) * sd / math.sqrt(seeds)


def pass_at_1(problems):
    return float(np.mean([p / d for p, d in problems.values()]))


# ---- runs ---------------------------------------------------------------------------------


def holm(pvalues):
    """Holm's step-down adjustment: sorted ascending, p_(i) -> max over j <= i of
    min(1, (m - j + 1) p_(j)); returned in the input's order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


TRAIN_SUMMARY = ["update/kl", "grad_norm", "entropy/divergent_tokens", "mode/logic", "mode/correct",
                 "cancellation/divergent_share", "cancellation/divergent_token_share",
                 "cancellation/net_over_gross", "localization/trigger_rate", "time/step"]


def train_summary(runs):
    """Per arm: each per-step training metric averaged over the steps of a run, then over the
    arm's runs (None values, steps where a metric was not defined, are left out), and the
    first and last tenth of the steps for the failure modes."""
    out = {}
    for a in sorted({r["arm"] for r in runs}):
        rs = [r for r in runs if r["arm"] == a and isinstance(r.get("train"), dict)]
        if not rs:
            continue
        entry = {"runs": len(rs)}
        for k in TRAIN_SUMMARY:
            per_run = []
            for r in rs:
                vals = [v for v in r["train"].get(k) or [] if v is not None]
                if vals:
                    per_run.append(float(np.mean(vals)))
            if per_run:
                entry[k] = float(np.mean(per_run))
        for k in ("mode/logic", "mode/correct"):
            firsts, lasts = [], []
            for r in rs:
                vals = [v for v in r["train"].get(k) or [] if v is not None]
                if vals:
                    tenth = max(1, len(vals) // 10)
                    firsts.append(float(np.mean(vals[:tenth])))
                    lasts.append(float(np.mean(vals[-tenth:])))
            if firsts:
                entry[k + "@first_tenth"] = float(np.mean(firsts))
                entry[k + "@last_tenth"] = float(np.mean(lasts))
        out[a] = entry
    return out


def load_runs(runs_dir):
    runs, starts = [], {}
    for path in sorted(glob.glob(os.path.join(runs_dir, "**", "*.json"), recursive=True)):
        with open(path) as f:
            try:
                r = json.load(f)
            except json.JSONDecodeError as e:
                print(f"analyze.py: {path}: not JSON ({e}); skipped", file=sys.stderr)
                continue
        missing = [k for k in ("variant", "arm", "seed", "evals") if k not in r]
        if missing:
            print(f"analyze.py: {path}: missing {', '.join(missing)}; skipped", file=sys.stderr)
            continue
        r["evals"] = sorted(r["evals"], key=lambda e: e["step"])
        if r["arm"] == "start":
            starts[(r["variant"], r["seed"])] = r["evals"][0]
        else:
            runs.append(r)
    for r in runs:
        if r["evals"][0]["step"] != 0 and (r["variant"], r["seed"]) in starts:
            r["evals"].insert(0, starts[(r["variant"], r["seed"])])
    return runs


def final_eval(run):
    return run["evals"][-1]


def analyze_variant(runs, baseline, resamples, rng_seed, primary_arm=None):
    """Arms, and every arm against the baseline paired by seed (plus earliest against
    earliest-unrenormalized when both ran). Verdict words go to the primary contrast only
    (primary_arm - baseline; None: every contrast is exploratory)."""
    arms = sorted({r["arm"] for r in runs}, key=lambda a: (a != baseline, a))
    by_arm = {a: {r["seed"]: r for r in runs if r["arm"] == a} for a in arms}
    out = {"arms": {}, "contrasts": {}}
    for a in arms:
        seeds = sorted(by_arm[a])
        finals = [pass_at_1(final_eval(by_arm[a][s])["problems"]) for s in seeds]
        entry = dict(seeds=seeds, final=finals, mean=float(np.mean(finals)), iqm=iqm(finals),
                     final_step=final_eval(by_arm[a][seeds[0]])["step"])
        entry["mean_ci"] = bootstrap_ci([finals], np.mean, resamples, rng_seed)
        entry["iqm_ci"] = bootstrap_ci([finals], iqm, resamples, rng_seed)
        if a != baseline and baseline in by_arm:
            base = [pass_at_1(final_eval(r)["problems"]) for r in by_arm[baseline].values()]
            entry["prob_improvement"] = probability_of_improvement(finals, base)
        out["arms"][a] = entry
    if baseline not in by_arm:
        return out
    pairs = [(a, baseline) for a in arms if a != baseline]
    if "earliest" in by_arm and "earliest-unrenormalized" in by_arm:
        pairs.append(("earliest", "earliest-unrenormalized"))
    for a, b in pairs:
        seeds = sorted(set(by_arm[a]) & set(by_arm[b]))
        if len(seeds) < 2:
            continue
        d, ev, per_problem, clusters = [], [], [], []
        for s in seeds:
            pa, pb = final_eval(by_arm[a][s])["problems"], final_eval(by_arm[b][s])["problems"]
            common = sorted(set(pa) & set(pb))
            pa = {j: pa[j] for j in common}
            pb = {j: pb[j] for j in common}
            d.append(pass_at_1(pa) - pass_at_1(pb))
            ev.append(eval_variance(pa) + eval_variance(pb))
            for j in common:
                per_problem.append(pa[j][0] / pa[j][1] - pb[j][0] / pb[j][1])
                clusters.append(j)
        d = np.asarray(d)
        n = len(d)
        sd = float(np.std(d, ddof=1))
        t = t_quantile(0.975, n - 1)
        pm, pse = clustered_mean_se(per_problem, clusters)
        direction = problem_direction(per_problem, clusters)
        # Evaluation noise of D (independent evaluations: an upper bound when the arms share
        # the sampling stream); what is left is the training seeds' own spread.
        eval_var = float(np.mean(ev))
        train_var = max(0.0, sd * sd - eval_var)
        c = dict(seeds=seeds, differences=d.tolist(), mean=float(d.mean()), sd=sd,
                 bootstrap_ci=bootstrap_ci([d], np.mean, resamples, rng_seed),
                 t_ci=(float(d.mean() - t * sd / math.sqrt(n)), float(d.mean() + t * sd / math.sqrt(n))),
                 per_problem_mean=pm, per_problem_clustered_se=pse, per_problem_direction=direction,
                 eval_sd=math.sqrt(eval_var), train_sd=math.sqrt(train_var),
                 mdd_80=minimum_detectable_difference(sd, n))
        t_stat = c["mean"] / (sd / math.sqrt(n)) if sd > 0 else math.inf
        c["p_value"] = 2.0 * (1.0 - t_cdf(abs(t_stat), n - 1)) if sd > 0 else 0.0
        c["sign_flip_p"] = sign_flip_p(d) if n <= 20 else None
        lo, hi = c["bootstrap_ci"]
        c["primary"] = a == primary_arm and b == baseline
        if not c["primary"]:
            c["verdict"] = "exploratory (no verdict)"
        elif lo > 0:
            c["verdict"] = "helps"
        elif hi < 0:
            c["verdict"] = "hurts"
        else:
            c["verdict"] = f"no difference this design can detect (it detects {100 * c['mdd_80']:.1f} points)"
        out["contrasts"][f"{a} - {b}"] = c
    return out


def curves(runs, resamples, rng_seed):
    """Per arm: steps, mean pass@1 over seeds and a 95% bootstrap band, at every step that
    all of the arm's runs evaluated."""
    res = {}
    for a in sorted({r["arm"] for r in runs}):
        rs = [r for r in runs if r["arm"] == a]
        steps = sorted(set.intersection(*[{e["step"] for e in r["evals"]} for r in rs]))
        rows = []
        for st in steps:
            vals = [pass_at_1(next(e for e in r["evals"] if e["step"] == st)["problems"]) for r in rs]
            lo, hi = bootstrap_ci([vals], np.mean, resamples, rng_seed) if len(vals) > 1 else (vals[0], vals[0])
            rows.append(dict(step=st, mean=float(np.mean(vals)), lo=lo, hi=hi))
        res[a] = rows
    return res


COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"]


def svg_curves(title, curve_set, path):
    w, h, ml, mr, mt, mb = 640, 400, 60, 150, 40, 50
    pts = [row for rows in curve_set.values() for row in rows]
    if not pts:
        return
    xmax = max(r["step"] for r in pts) or 1
    ymin = min(r["lo"] for r in pts)
    ymax = max(r["hi"] for r in pts)
    pad = max(0.02, 0.1 * (ymax - ymin))
    ymin, ymax = max(0.0, ymin - pad), min(1.0, ymax + pad)
    if ymax <= ymin:
        ymax = ymin + 0.05

    def X(s):
        return ml + (w - ml - mr) * s / xmax

    def Y(v):
        return mt + (h - mt - mb) * (1.0 - (v - ymin) / (ymax - ymin))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{ml}" y="20" font-size="14">{title}</text>',
           f'<line x1="{ml}" y1="{h - mb}" x2="{w - mr}" y2="{h - mb}" stroke="black"/>',
           f'<line x1="{ml}" y1="{mt}" x2="{ml}" y2="{h - mb}" stroke="black"/>',
           f'<text x="{(ml + w - mr) / 2}" y="{h - 12}" text-anchor="middle">step</text>',
           f'<text x="14" y="{(mt + h - mb) / 2}" transform="rotate(-90 14 {(mt + h - mb) / 2})" '
           f'text-anchor="middle">held-out pass@1</text>']
    for i in range(6):
        v = ymin + (ymax - ymin) * i / 5
        out.append(f'<text x="{ml - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
        out.append(f'<line x1="{ml}" y1="{Y(v):.1f}" x2="{w - mr}" y2="{Y(v):.1f}" stroke="#eee"/>')
    for s in sorted({r["step"] for r in pts}):
        out.append(f'<text x="{X(s):.1f}" y="{h - mb + 16}" text-anchor="middle">{s}</text>')
    for i, (arm, rows) in enumerate(curve_set.items()):
        col = COLORS[i % len(COLORS)]
        band = [f"{X(r['step']):.1f},{Y(r['hi']):.1f}" for r in rows] + \
               [f"{X(r['step']):.1f},{Y(r['lo']):.1f}" for r in reversed(rows)]
        out.append(f'<polygon points="{" ".join(band)}" fill="{col}" fill-opacity="0.15" stroke="none"/>')
        line = " ".join(f"{X(r['step']):.1f},{Y(r['mean']):.1f}" for r in rows)
        out.append(f'<polyline points="{line}" fill="none" stroke="{col}" stroke-width="2"/>')
        out.append(f'<rect x="{w - mr + 12}" y="{mt + 18 * i}" width="12" height="12" fill="{col}"/>')
        out.append(f'<text x="{w - mr + 30}" y="{mt + 18 * i + 11}">{arm}</text>')
    out.append(f'<text x="{w - mr + 12}" y="{mt + 18 * len(curve_set) + 16}" font-size="10">'
               'mean over seeds, 95% band</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def markdown(result):
    lines = []
    for v, res in result.items():
        lines.append(f"## {v}\n")
        lines.append("| arm | seeds | final pass@1 mean [95% CI] | IQM [95% CI] | P(improvement over baseline) |")
        lines.append("|---|---|---|---|---|")
        for a, e in res["arms"].items():
            poi = f"{e['prob_improvement']:.2f}" if "prob_improvement" in e else "-"
            lines.append(f"| {a} | {len(e['seeds'])} | {e['mean']:.3f} [{e['mean_ci'][0]:.3f}, {e['mean_ci'][1]:.3f}] "
                         f"| {e['iqm']:.3f} [{e['iqm_ci'][0]:.3f}, {e['iqm_ci'][1]:.3f}] | {poi} |")
        if res["contrasts"]:
            lines.append("")
            lines.append("| contrast | seeds | mean paired D [bootstrap 95% CI] | paired t CI | p (Holm) "
                         "| per-problem D +- clustered SE | problems ahead / behind / even "
                         "| SD of D (eval part, rest) | MDD at 80% | verdict |")
            lines.append("|---|---|---|---|---|---|---|---|---|---|")
            for name, c in res["contrasts"].items():
                lines.append(f"| {name} | {len(c['seeds'])} | {c['mean']:+.3f} [{c['bootstrap_ci'][0]:+.3f}, "
                             f"{c['bootstrap_ci'][1]:+.3f}] | [{c['t_ci'][0]:+.3f}, {c['t_ci'][1]:+.3f}] | {c['p_value']:.3f}"
                             + (f" ({c['p_holm']:.3f})" if "p_holm" in c else "") + " "
                             f"| {c['per_problem_mean']:+.3f} +- {c['per_problem_clustered_se']:.3f} "
                             f"| {c['per_problem_direction']['ahead']} / {c['per_problem_direction']['behind']} / "
                             f"{c['per_problem_direction']['even']} "
                             f"| {c['sd']:.3f} ({c['eval_sd']:.3f}, {c['train_sd']:.3f}) | {c['mdd_80']:.3f} | {c['verdict']} |")
        if res.get("train"):
            lines.append("")
            lines.append("Per-step training metrics, mean over steps and runs (update KL: KL(pi before || pi after) on "
                         "the step's tokens; divergent share: the share of uniform GRPO's net update, after "
                         "cancellation within groups, on the divergent statement, against the share of tokens "
                         "that are divergent):")
            lines.append("")
            lines.append("| arm | runs | update KL | grad norm | entropy at divergent tokens | LOGIC first -> last tenth "
                         "| divergent share of net update | divergent share of tokens | net / gross |")
            lines.append("|---|---|---|---|---|---|---|---|---|")

            def f(e, k, fmt):
                return fmt % e[k] if k in e else "-"
            for a, e in res["train"].items():
                lines.append(f"| {a} | {e['runs']} | {f(e, 'update/kl', '%.2e')} | {f(e, 'grad_norm', '%.3f')} "
                             f"| {f(e, 'entropy/divergent_tokens', '%.3f')} "
                             f"| {f(e, 'mode/logic@first_tenth', '%.2f')} -> {f(e, 'mode/logic@last_tenth', '%.2f')} "
                             f"| {f(e, 'cancellation/divergent_share', '%.3f')} "
                             f"| {f(e, 'cancellation/divergent_token_share', '%.3f')} "
                             f"| {f(e, 'cancellation/net_over_gross', '%.3f')} |")
        lines.append("")
    return "\n".join(lines)


def tuning_markdown(t):
    """The learning rates: uniform's sweep and the KL matching (study.py's tuning.json)."""
    lines = ["## Learning rates (tuning seeds %s)\n" % ", ".join(str(x) for x in t.get("tuning_seeds", [])),
             t.get("rule", ""), "", "| uniform's rate | mean final validation pass@1 | per seed |", "|---|---|---|"]
    for row in t.get("uniform_sweep", []):
        lines.append("| %g | %.3f | %s |" % (row["lr"], row["mean"], ", ".join("%.3f" % x for x in row["per_seed"])))
    lines += ["", "| arm | rate | how | KL at uniform's rate | KL at the matched rate (/ uniform's) |",
              "|---|---|---|---|---|"]
    for arm, row in t.get("arms", {}).items():
        if "phase1" in row:
            ratio = row["phase2"].get("kl_over_uniform")
            lines.append("| %s | %.3g | %s | %.2e | %.2e (%s) |" % (
                arm, row["pick"], row["how"], row["phase1"]["kl"], row["phase2"]["kl"],
                "%.2fx" % ratio if ratio is not None else "-"))
        else:
            lines.append("| %s | %.3g | %s | %.2e | - |" % (arm, row["pick"], row.get("how", ""), row.get("kl", 0.0)))
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs_dir")
    ap.add_argument("--out", default=None)
    ap.add_argument("--baseline", default="uniform")
    ap.add_argument("--resamples", type=int, default=10000)
    ap.add_argument("--rng-seed", type=int, default=0)
    ap.add_argument("--primary", default="earliest", help="the primary contrast's arm (against --baseline)")
    ap.add_argument("--primary-variants", default="v0,v1",
                    help="the pre-registered primary variants: Holm's adjustment runs over their primary contrasts "
                         "(every variant's primary-arm contrast gets verdict words, with its own MDD)")
    ap.add_argument("--tuning", default=None,
                    help="study.py's tuning.json (default: RUNS_DIR/../tuning.json when it exists)")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.runs_dir):
        print(f"analyze.py: {a.runs_dir}: not a directory", file=sys.stderr)
        return 2
    if a.resamples < 100:
        print(f"analyze.py: --resamples {a.resamples}: need at least 100", file=sys.stderr)
        return 2
    out = a.out or os.path.join(a.runs_dir, "..")
    os.makedirs(out, exist_ok=True)
    runs = load_runs(a.runs_dir)
    if not runs:
        print(f"analyze.py: {a.runs_dir}: no finished runs", file=sys.stderr)
        return 2
    result = {}
    primary_variants = a.primary_variants.split(",")
    for v in sorted({r["variant"] for r in runs}):
        rv = [r for r in runs if r["variant"] == v]
        result[v] = analyze_variant(rv, a.baseline, a.resamples, a.rng_seed, a.primary)
        result[v]["curves"] = curves(rv, a.resamples, a.rng_seed)
        result[v]["train"] = train_summary(rv)
        svg_curves(f"{v}: held-out pass@1", result[v]["curves"], os.path.join(out, f"pass_at_1_{v}.svg"))
    # Holm over the variants' primary contrasts (PREREGISTRATION.md: two variants, two tests).
    prim = [(v, c) for v in result if v in primary_variants for c in result[v]["contrasts"].values()
            if c.get("primary")]
    for (v, c), p in zip(prim, holm([c["p_value"] for _, c in prim])):
        c["p_holm"] = p
    with open(os.path.join(out, "analysis.json"), "w") as f:
        json.dump(result, f, indent=1)
    md = markdown(result)
    tuning = a.tuning or os.path.join(a.runs_dir, "..", "tuning.json")
    if os.path.exists(tuning):
        try:
            with open(tuning) as f:
                md = tuning_markdown(json.load(f)) + "\n" + md
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"analyze.py: {tuning}: not read ({e})", file=sys.stderr)
    with open(os.path.join(out, "analysis.md"), "w") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
