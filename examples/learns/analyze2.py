#!/usr/bin/python3
"""Analysis of the confirmatory credit study (issue 37), exactly as
docs/results/credit-study-2/PREREGISTRATION.md registers it. numpy and the standard library.

    analyze2.py RESULTS_DIR [--out DIR] [--resamples 10000] [--rng-seed 0]

RESULTS_DIR is what study2.py writes: runs/*.json (analyze.py's run format), tuning.json,
pilot.json, tuning-secondary.json. Writes into --out (default RESULTS_DIR): analysis.json,
analysis.md and pass_at_1_<variant>.svg.

The three primary hypotheses (Holm over their one-sided paired-t p-values, family-wise
alpha 0.025):
  H1  v1  signed - uniform   non-inferiority, margin 1 point: H0 mean D <= -0.01
  H2  v1  signed - earliest  H0 mean D <= 0
  H3  v0  signed - uniform   H0 mean D <= 0
Beside each: the paired bootstrap over seeds, the exact one-sided sign-flip test (over the
2^n sign patterns of D + margin), the two-level (seed x problem) bootstrap, and the MDD at
80% power. Every other contrast (v2, earliest - uniform, the secondary arms) is reported
with the same statistics and no verdict words. What is still missing (runs not finished)
is listed, and a hypothesis with fewer than its 10 seeds gets no verdict.
"""
import argparse
import glob
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import analyze as A  # noqa: E402

ALPHA = 0.025  # one-sided, family-wise over the three primary hypotheses
MARGIN = 0.01  # H1's non-inferiority margin (1 point of pass@1)
SEEDS = 10
HYPOTHESES = [
    dict(name="H1", variant="v1", arm="signed", baseline="uniform", margin=MARGIN, kind="non-inferiority"),
    dict(name="H2", variant="v1", arm="signed", baseline="earliest", margin=0.0, kind="superiority"),
    dict(name="H3", variant="v0", arm="signed", baseline="uniform", margin=0.0, kind="superiority"),
]
REGIME = (0.3, 0.6)


def one_sided_t_p(d, margin):
    """p of the one-sided paired t-test of H0: mean(d) <= -margin against mean(d) > -margin."""
    d = np.asarray(d, dtype=float)
    n = len(d)
    sd = float(np.std(d, ddof=1))
    if sd == 0:
        return 0.0 if d.mean() > -margin else 1.0
    t = (float(d.mean()) + margin) / (sd / math.sqrt(n))
    return 1.0 - A.t_cdf(t, n - 1)


def sign_flip_one_sided_p(d, margin):
    """Exact one-sided sign-flip p of H0: the distribution of d + margin is symmetric about 0,
    against a positive shift: the share of the 2^n sign patterns whose mean is at least the
    observed mean of d + margin."""
    x = np.asarray(d, dtype=float) + margin
    n = len(x)
    if n == 0 or n > 20:
        raise ValueError("sign_flip_one_sided_p: n = %d (1..20 differences)" % n)
    signs = 1.0 - 2.0 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
    return float(np.mean(signs @ x / n >= x.mean() - 1e-12))


def two_level_bootstrap(per_seed_problem_d, resamples, rng_seed, level=0.95):
    """Percentile interval of the mean paired difference when both the seeds and, within a
    drawn seed, its problems are resampled with replacement. per_seed_problem_d: one array
    per seed of per-problem differences (the arms' pass rates on the same problems)."""
    rng = np.random.default_rng(rng_seed)
    seeds = [np.asarray(x, dtype=float) for x in per_seed_problem_d]
    n = len(seeds)
    stats = np.empty(resamples)
    for r in range(resamples):
        pick = rng.integers(0, n, n)
        stats[r] = np.mean([seeds[i][rng.integers(0, len(seeds[i]), len(seeds[i]))].mean() for i in pick])
    a = (1.0 - level) / 2.0
    return float(np.quantile(stats, a)), float(np.quantile(stats, 1.0 - a))


def contrast(by_arm, a, b, resamples, rng_seed, margin=0.0):
    """Paired statistics of arm a - arm b over the seeds both finished."""
    seeds = sorted(set(by_arm.get(a, {})) & set(by_arm.get(b, {})))
    if len(seeds) < 2:
        return None
    d, per_seed = [], []
    for s in seeds:
        pa, pb = A.final_eval(by_arm[a][s])["problems"], A.final_eval(by_arm[b][s])["problems"]
        common = sorted(set(pa) & set(pb))
        x = [pa[j][0] / pa[j][1] - pb[j][0] / pb[j][1] for j in common]
        per_seed.append(x)
        d.append(float(np.mean(x)))
    d = np.asarray(d)
    n = len(d)
    sd = float(np.std(d, ddof=1))
    se = sd / math.sqrt(n)
    t975 = A.t_quantile(0.975, n - 1)
    c = dict(seeds=seeds, differences=d.tolist(), mean=float(d.mean()), sd=sd,
             t_ci=(float(d.mean() - t975 * se), float(d.mean() + t975 * se)),
             p_two_sided=(2.0 * (1.0 - A.t_cdf(abs(d.mean()) / se, n - 1)) if se > 0 else 0.0),
             p_one_sided=one_sided_t_p(d, margin), margin=margin,
             bootstrap_ci=A.bootstrap_ci([d], np.mean, resamples, rng_seed),
             two_level_ci=two_level_bootstrap(per_seed, max(1000, resamples // 5), rng_seed),
             sign_flip_p_two_sided=A.sign_flip_p(d) if n <= 20 else None,
             sign_flip_p_one_sided=sign_flip_one_sided_p(d, margin) if n <= 20 else None,
             mdd_80=A.minimum_detectable_difference(sd, n) if n > 1 else None,
             wins=int(np.sum(d > 0)), losses=int(np.sum(d < 0)), ties=int(np.sum(d == 0)))
    flat = [x for xs in per_seed for x in xs]
    clusters = [j for s in seeds for j in sorted(set(A.final_eval(by_arm[a][s])["problems"]) &
                                                 set(A.final_eval(by_arm[b][s])["problems"]))]
    c["per_problem_direction"] = A.problem_direction(flat, clusters)
    return c


def verdict(h, c, p_holm):
    """Verdict words of a primary hypothesis (PREREGISTRATION.md)."""
    if c is None or len(c["seeds"]) < SEEDS:
        return "no verdict yet (%d of %d seeds)" % (0 if c is None else len(c["seeds"]), SEEDS)
    lo, hi = c["t_ci"]
    if h["kind"] == "non-inferiority":
        if p_holm <= ALPHA:
            return "not inferior (margin 1 point)"
        if hi < -h["margin"]:
            return "hurts (the whole interval below -1 point)"
        return "non-inferiority not shown (paired t 95%% interval [%+.1f, %+.1f] points)" % (100 * lo, 100 * hi)
    if p_holm <= ALPHA:
        return "helps"
    if hi < 0:
        return "hurts"
    return "no difference this design can detect (MDD %.1f points)" % (100 * c["mdd_80"])


def kl_by_arm(runs):
    out = {}
    for a in sorted({r["arm"] for r in runs}):
        per = []
        for r in runs:
            if r["arm"] == a:
                v = [x for x in (r.get("train") or {}).get("update/kl") or [] if x is not None]
                if v:
                    per.append(float(np.mean(v)))
        if per:
            out[a] = dict(mean=float(np.mean(per)), runs=len(per))
    return out


def analyze(results_dir, resamples=10000, rng_seed=0):
    runs = A.load_runs(os.path.join(results_dir, "runs"))
    starts = {}
    for path in sorted(glob.glob(os.path.join(results_dir, "runs", "*.json"))):
        with open(path) as f:
            try:
                r = json.load(f)
            except ValueError:
                continue  # load_runs reported it
        if r.get("arm") == "start" and r.get("evals"):
            starts[(r["variant"], r["seed"])] = A.pass_at_1(r["evals"][0]["problems"])
    out = dict(hypotheses=[], variants={}, starts_outside_regime=[
        dict(variant=v, seed=s, pass_at_1=p) for (v, s), p in sorted(starts.items())
        if not REGIME[0] <= p <= REGIME[1]])
    # Paired design: every file of a (variant, seed) must name the same start model (a seed
    # whose runs were split over machines whose pre-training differed is listed, to rerun).
    shas = {}
    for path in sorted(glob.glob(os.path.join(results_dir, "runs", "*.json"))):
        try:
            with open(path) as f:
                r = json.load(f)
        except ValueError:
            continue
        if "start_model_sha256" in r:
            shas.setdefault((r["variant"], r["seed"]), set()).add(r["start_model_sha256"])
    out["seeds_with_different_starts"] = [dict(variant=v, seed=s) for (v, s), x in sorted(shas.items()) if len(x) > 1]
    by_variant = {}
    for v in sorted({r["variant"] for r in runs}):
        rv = [r for r in runs if r["variant"] == v]
        by_arm = {a: {r["seed"]: r for r in rv if r["arm"] == a} for a in {r["arm"] for r in rv}}
        by_variant[v] = by_arm
        arms = sorted(by_arm, key=lambda a: (a not in ("uniform", "earliest", "signed"), a))
        vres = dict(arms={}, contrasts={}, kl=kl_by_arm(rv), curves=A.curves(rv, min(resamples, 2000), rng_seed))
        for a in arms:
            finals = [A.pass_at_1(A.final_eval(by_arm[a][s])["problems"]) for s in sorted(by_arm[a])]
            e = dict(seeds=sorted(by_arm[a]), mean=float(np.mean(finals)), iqm=A.iqm(finals), final=finals)
            if a != "uniform" and "uniform" in by_arm:
                base = [A.pass_at_1(A.final_eval(r)["problems"]) for r in by_arm["uniform"].values()]
                e["prob_improvement_over_uniform"] = A.probability_of_improvement(finals, base)
            vres["arms"][a] = e
        pairs = [(a, "uniform") for a in arms if a != "uniform"] + \
                [(a, "earliest") for a in arms if a not in ("uniform", "earliest")]
        for a, b in pairs:
            c = contrast(by_arm, a, b, resamples, rng_seed)
            if c is not None:
                vres["contrasts"]["%s - %s" % (a, b)] = c
        out["variants"][v] = vres
    cs = [contrast(by_variant.get(h["variant"], {}), h["arm"], h["baseline"], resamples, rng_seed, h["margin"])
          for h in HYPOTHESES]
    ps = [c["p_one_sided"] if c is not None else 1.0 for c in cs]
    for h, c, p_holm in zip(HYPOTHESES, cs, A.holm(ps)):
        out["hypotheses"].append(dict(h, contrast=c, p_holm=p_holm, verdict=verdict(h, c, p_holm)))
    return out


def markdown(res):
    L = ["## Primary hypotheses (Holm over three one-sided paired t-tests, alpha 0.025)", "",
         "| | contrast | seeds | mean D | paired t 95% CI | one-sided p (Holm) | sign-flip one-sided p "
         "| bootstrap 95% CI | two-level 95% CI | MDD 80% | wins / losses / ties | verdict |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for h in res["hypotheses"]:
        c = h["contrast"]
        name = "%s %s - %s%s" % (h["variant"], h["arm"], h["baseline"],
                                 " (margin %g pt)" % (100 * h["margin"]) if h["margin"] else "")
        if c is None:
            L.append("| %s | %s | 0 | - | - | - | - | - | - | - | - | %s |" % (h["name"], name, h["verdict"]))
            continue
        L.append("| %s | %s | %d | %+.2f | [%+.2f, %+.2f] | %.4f (%.4f) | %.4f | [%+.2f, %+.2f] | [%+.2f, %+.2f] "
                 "| %.2f | %d / %d / %d | %s |" % (
                     h["name"], name, len(c["seeds"]), 100 * c["mean"], 100 * c["t_ci"][0], 100 * c["t_ci"][1],
                     c["p_one_sided"], h["p_holm"], c["sign_flip_p_one_sided"], 100 * c["bootstrap_ci"][0],
                     100 * c["bootstrap_ci"][1], 100 * c["two_level_ci"][0], 100 * c["two_level_ci"][1],
                     100 * c["mdd_80"], c["wins"], c["losses"], c["ties"], h["verdict"]))
    L.append("")
    L.append("Differences in points of held-out pass@1 at step 100.")
    for v, vr in res["variants"].items():
        L += ["", "## %s" % v, "", "| arm | seeds | final pass@1 mean | IQM | P(improvement over uniform) "
              "| update KL (mean over runs) |", "|---|---|---|---|---|---|"]
        for a, e in vr["arms"].items():
            kl = vr["kl"].get(a)
            L.append("| %s | %d | %.3f | %.3f | %s | %s |" % (
                a, len(e["seeds"]), e["mean"], e["iqm"],
                "%.2f" % e["prob_improvement_over_uniform"] if "prob_improvement_over_uniform" in e else "-",
                "%.2e" % kl["mean"] if kl else "-"))
        L += ["", "| contrast (exploratory unless a hypothesis above) | seeds | mean D | paired t 95% CI "
              "| two-sided p | sign-flip p | two-level 95% CI | MDD 80% | problems ahead / behind / even |",
              "|---|---|---|---|---|---|---|---|---|"]
        for name, c in vr["contrasts"].items():
            dr = c["per_problem_direction"]
            L.append("| %s | %d | %+.2f | [%+.2f, %+.2f] | %.4f | %.4f | [%+.2f, %+.2f] | %.2f | %d / %d / %d |" % (
                name, len(c["seeds"]), 100 * c["mean"], 100 * c["t_ci"][0], 100 * c["t_ci"][1], c["p_two_sided"],
                c["sign_flip_p_two_sided"], 100 * c["two_level_ci"][0], 100 * c["two_level_ci"][1],
                100 * c["mdd_80"], dr["ahead"], dr["behind"], dr["even"]))
    L += ["", "Starts outside the regime (held-out pass@1 %.1f-%.1f): %s" % (
        REGIME[0], REGIME[1], ", ".join("%s seed %d (%.3f)" % (x["variant"], x["seed"], x["pass_at_1"])
                                        for x in res["starts_outside_regime"]) or "none"), ""]
    if res.get("seeds_with_different_starts"):
        L += ["**Not paired**: the runs of %s did not all start from the same pre-trained model; rerun "
              "those seeds whole (README, Running it)." % ", ".join(
                  "%s seed %d" % (x["variant"], x["seed"]) for x in res["seeds_with_different_starts"]), ""]
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results_dir")
    ap.add_argument("--out", default=None)
    ap.add_argument("--resamples", type=int, default=10000)
    ap.add_argument("--rng-seed", type=int, default=0)
    a = ap.parse_args(argv)
    if not os.path.isdir(os.path.join(a.results_dir, "runs")):
        print("analyze2.py: %s: no runs/ directory" % a.results_dir, file=sys.stderr)
        return 2
    if a.resamples < 100:
        print("analyze2.py: --resamples %d: need at least 100" % a.resamples, file=sys.stderr)
        return 2
    res = analyze(a.results_dir, a.resamples, a.rng_seed)
    out = a.out or a.results_dir
    os.makedirs(out, exist_ok=True)
    for v, vr in res["variants"].items():
        A.svg_curves("%s: held-out pass@1" % v, vr["curves"], os.path.join(out, "pass_at_1_%s.svg" % v))
    with open(os.path.join(out, "analysis.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = markdown(res)
    with open(os.path.join(out, "analysis.md"), "w") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
