#!/usr/bin/python3
"""Tests of analyze.py on synthetic inputs with answers known by hand (unittest, numpy only).

    /usr/bin/python3 examples/learns/test_analyze.py
"""
import json
import math
import os
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import analyze as A  # noqa: E402


class Distributions(unittest.TestCase):
    def test_t_quantiles_match_tables(self):
        # Printed t tables: t_{0.975, 9} = 2.262, t_{0.80, 9} = 0.883, t_{0.975, 1} = 12.706,
        # t_{0.975, 30} = 2.042; the normal z_{0.975} = 1.960, z_{0.8} = 0.842.
        self.assertAlmostEqual(A.t_quantile(0.975, 9), 2.2622, places=3)
        self.assertAlmostEqual(A.t_quantile(0.80, 9), 0.8834, places=3)
        self.assertAlmostEqual(A.t_quantile(0.975, 1), 12.7062, places=2)
        self.assertAlmostEqual(A.t_quantile(0.975, 30), 2.0423, places=3)
        self.assertAlmostEqual(A.t_quantile(0.975, math.inf), 1.95996, places=4)
        self.assertAlmostEqual(A.t_quantile(0.8, math.inf), 0.84162, places=4)
        self.assertAlmostEqual(A.t_quantile(0.025, 9), -2.2622, places=3)

    def test_incomplete_beta_symmetry(self):
        self.assertAlmostEqual(A.betainc(3.0, 3.0, 0.5), 0.5, places=12)
        # I_x(1, 1) = x; I_x(a, 1) = x^a.
        self.assertAlmostEqual(A.betainc(1.0, 1.0, 0.3), 0.3, places=12)
        self.assertAlmostEqual(A.betainc(2.5, 1.0, 0.4), 0.4 ** 2.5, places=12)


class Statistics(unittest.TestCase):
    def test_iqm(self):
        self.assertAlmostEqual(A.iqm([1, 2, 3, 4, 5, 6, 7, 8]), 4.5)  # mean of 3, 4, 5, 6
        self.assertAlmostEqual(A.iqm([100, 1, 3, 2]), 2.5)  # mean of 2, 3
        self.assertAlmostEqual(A.iqm(list(range(10))), 4.5)  # 2 cut from each end
        self.assertAlmostEqual(A.iqm([0.1, 0.9, 0.5, 0.5, 0.4, 0.6, 0.0, 1.0, 0.45, 0.55]),
                               np.mean([0.4, 0.45, 0.5, 0.5, 0.55, 0.6]))

    def test_probability_of_improvement(self):
        # x > y in 6 of the 9 pairs (every x beats both zeros, none beats 5).
        self.assertAlmostEqual(A.probability_of_improvement([1, 2, 3], [0, 0, 5]), 6 / 9)
        self.assertAlmostEqual(A.probability_of_improvement([1], [1]), 0.5)
        # 2 > 1 (1), 2 = 2 (0.5), 1 = 1 (0.5), 1 < 2 (0): 2 / 4.
        self.assertAlmostEqual(A.probability_of_improvement([1, 2], [1, 2]), 0.5)

    def test_sign_flip_by_hand(self):
        # d = (1, 2, 3): of the 8 sign patterns only +++ and --- reach |mean| 2 -> p = 2/8.
        self.assertAlmostEqual(A.sign_flip_p([1, 2, 3]), 0.25)
        # d = (1, -1): every pattern has |mean| >= 0 -> p = 1; (2, 1): ++, -- (1.5) -> 0.5.
        self.assertAlmostEqual(A.sign_flip_p([1, -1]), 1.0)
        self.assertAlmostEqual(A.sign_flip_p([2, 1]), 0.5)
        # v2's per-seed differences (points) from the credit study: p = 8/32.
        self.assertAlmostEqual(A.sign_flip_p([2.730, 1.006, 0.0, 0.814, -0.192]), 0.25)
        with self.assertRaises(ValueError):
            A.sign_flip_p([])

    def test_clustered_se_by_hand(self):
        # mean 0.75; cluster a: (1 - .75) + (0 - .75) = -0.5; b: 0.25 + 0.25 = 0.5;
        # SE = sqrt(0.25 + 0.25) / 4.
        m, se = A.clustered_mean_se([1, 0, 1, 1], ["a", "a", "b", "b"])
        self.assertAlmostEqual(m, 0.75)
        self.assertAlmostEqual(se, math.sqrt(0.5) / 4)
        # One observation per cluster: the naive SE without the n - 1 correction,
        # sqrt(sum (x - m)^2) / n.
        x = [0.2, 0.5, 0.9]
        m, se = A.clustered_mean_se(x, [1, 2, 3])
        self.assertAlmostEqual(se, math.sqrt(sum((v - np.mean(x)) ** 2 for v in x)) / 3)

    def test_eval_variance_by_hand(self):
        # Problem a: 1 of 2 passed, p = .5, unbiased var of the mean .25 / (2 - 1) = .25;
        # b: 2 of 2, 0. Mean over N = 2 problems: (.25 + 0) / 4.
        self.assertAlmostEqual(A.eval_variance({"a": [1, 2], "b": [2, 2]}), 0.0625)
        # 8 samples of p = .5 on each of 4 problems: .25 / 7 / 4 per problem -> .25 / 28.
        self.assertAlmostEqual(A.eval_variance({str(j): [4, 8] for j in range(4)}), 0.25 / 28)

    def test_stratified_bootstrap(self):
        # Each stratum keeps its size, so the mean of {0 x 5} + {1 x 5} is always 0.5;
        # an unstratified resample of the ten values would not be.
        lo, hi = A.bootstrap_ci([[0] * 5, [1] * 5], np.mean, resamples=500)
        self.assertEqual((lo, hi), (0.5, 0.5))
        lo, hi = A.bootstrap_ci([[0] * 5 + [1] * 5], np.mean, resamples=500)
        self.assertLess(lo, 0.5)
        self.assertGreater(hi, 0.5)
        # n = 400 standard normal values: the 95% interval of the mean is about +-1.96 / 20.
        x = np.random.default_rng(1).standard_normal(400)
        lo, hi = A.bootstrap_ci([x], np.mean, resamples=4000)
        self.assertAlmostEqual(hi - lo, 2 * 1.96 / 20, delta=0.03)
        self.assertLess(lo, x.mean())
        self.assertGreater(hi, x.mean())

    def test_mdd_by_hand_and_by_simulation(self):
        # (2.2622 + 0.8834) * 0.02 / sqrt(10) = 0.019894.
        self.assertAlmostEqual(A.minimum_detectable_difference(0.02, 10), 3.1456 * 0.02 / math.sqrt(10), places=4)
        # A paired t-test on 10 normal differences with mean MDD and SD 1 rejects in ~80% of
        # simulated studies (the formula is an approximation: accept 0.75-0.85).
        rng = np.random.default_rng(7)
        mdd = A.minimum_detectable_difference(1.0, 10)
        crit = A.t_quantile(0.975, 9)
        d = rng.standard_normal((20000, 10)) + mdd
        t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(10))
        power = float(np.mean(np.abs(t) > crit))
        self.assertGreater(power, 0.75)
        self.assertLess(power, 0.85)


def write_run(d, variant, arm, seed, evals, train=None):
    r = dict(variant=variant, arm=arm, seed=seed, evals=[dict(step=s, problems=p) for s, p in evals])
    if train is not None:
        r["train"] = dict(steps=list(range(1, 1 + max(len(v) for v in train.values()))), **train)
    with open(os.path.join(d, f"{variant}-{arm}-{seed}.json"), "w") as f:
        json.dump(r, f)


class EndToEnd(unittest.TestCase):
    def test_known_differences(self):
        with tempfile.TemporaryDirectory() as tmp:
            runs = os.path.join(tmp, "runs")
            os.makedirs(runs)
            # v0: 10 seeds, 10 problems x 10 samples. uniform passes 4 of 10 on every problem
            # plus seed % 3 on problem 0; earliest passes exactly 1 more on every problem:
            # D = +0.1 on every seed, SD 0 -> "helps", interval [0.1, 0.1].
            # v1: earliest = uniform + 1 on problem 0 for even seeds, -1 for odd seeds:
            # D = +-0.01, mean 0 -> no detectable difference.
            for s in range(1, 11):
                uni = {str(j): [4 + (s % 3 if j == 0 else 0), 10] for j in range(10)}
                write_run(runs, "v0", "start", s, [(0, {str(j): [3, 10] for j in range(10)})])
                write_run(runs, "v0", "uniform", s, [(50, uni), (100, uni)])
                write_run(runs, "v0", "earliest", s, [(50, uni), (100, {j: [p + 1, n] for j, (p, n) in uni.items()})])
                e1 = dict(uni)
                e1["0"] = [uni["0"][0] + (1 if s % 2 == 0 else -1), 10]
                write_run(runs, "v1", "uniform", s, [(0, uni), (100, uni)])
                write_run(runs, "v1", "earliest", s, [(0, uni), (100, e1)])
            out = os.path.join(tmp, "out")
            self.assertEqual(A.main([runs, "--out", out, "--resamples", "500"]), 0)
            with open(os.path.join(out, "analysis.json")) as f:
                res = json.load(f)
            c = res["v0"]["contrasts"]["earliest - uniform"]
            self.assertAlmostEqual(c["mean"], 0.1)
            self.assertAlmostEqual(c["sd"], 0.0, places=12)
            self.assertAlmostEqual(c["bootstrap_ci"][0], 0.1)
            self.assertAlmostEqual(c["bootstrap_ci"][1], 0.1)
            self.assertEqual(c["verdict"], "helps")
            self.assertAlmostEqual(c["per_problem_mean"], 0.1)
            self.assertAlmostEqual(c["per_problem_clustered_se"], 0.0, places=12)
            # +0.1 on every problem: all 10 ahead.
            self.assertEqual({k: c["per_problem_direction"][k] for k in ("ahead", "behind", "even")},
                             dict(ahead=10, behind=0, even=0))
            self.assertAlmostEqual(res["v0"]["arms"]["earliest"]["prob_improvement"], 1.0)
            # uniform's final pass@1 per seed: 0.4 + (s % 3) / 100 -> seeds 1..10 give
            # 0.41, 0.42, 0.40, 0.41, 0.42, 0.40, 0.41, 0.42, 0.40, 0.41.
            u = res["v0"]["arms"]["uniform"]
            self.assertAlmostEqual(u["mean"], 0.41)
            self.assertAlmostEqual(u["iqm"], 0.41)  # middle six: 0.40, 0.41 x 4, 0.42
            # The start file supplies step 0 of the v0 runs: the curve starts at 0.3.
            curve = {r["step"]: r for r in res["v0"]["curves"]["earliest"]}
            self.assertEqual(sorted(curve), [0, 50, 100])
            self.assertAlmostEqual(curve[0]["mean"], 0.3)
            self.assertAlmostEqual(curve[100]["mean"], 0.51)

            c1 = res["v1"]["contrasts"]["earliest - uniform"]
            self.assertAlmostEqual(c1["mean"], 0.0, places=12)
            # D = +-0.01 alternating, 10 values: SD = 0.01 * sqrt(10 / 9).
            self.assertAlmostEqual(c1["sd"], 0.01 * math.sqrt(10 / 9))
            mdd = A.minimum_detectable_difference(c1["sd"], 10)
            self.assertAlmostEqual(c1["mdd_80"], mdd)
            self.assertEqual(c1["verdict"], f"no difference this design can detect (it detects {100 * mdd:.1f} points)")
            self.assertAlmostEqual(c1["p_value"], 1.0)
            # Per-problem differences: problem 0 has +-0.1 per seed, the others 0; clustered by
            # problem the sums of deviations are 0 for every cluster (5 x +0.1, 5 x -0.1).
            self.assertAlmostEqual(c1["per_problem_clustered_se"], 0.0, places=12)
            # Problem 0's mean over seeds is 0 (5 x +0.1, 5 x -0.1), the others 0: all even.
            self.assertEqual({k: c1["per_problem_direction"][k] for k in ("ahead", "behind", "even")},
                             dict(ahead=0, behind=0, even=10))
            for v in ("v0", "v1"):
                root = ET.parse(os.path.join(out, f"pass_at_1_{v}.svg")).getroot()
                self.assertTrue(root.tag.endswith("svg"))
                self.assertEqual(len([e for e in root.iter() if e.tag.endswith("polyline")]), 2)
            with open(os.path.join(out, "analysis.md")) as f:
                self.assertIn("| earliest - uniform | 10 | +0.100", f.read())

    def test_problem_direction_by_hand(self):
        # Problem a: +0.02, +0.00 -> mean +0.01 (ahead); b: -0.01, -0.02 -> -0.015 (behind);
        # c: +0.004, -0.002 -> +0.001 (even, inside +-0.005).
        d = A.problem_direction([0.02, 0.0, -0.01, -0.02, 0.004, -0.002], ["a", "a", "b", "b", "c", "c"])
        self.assertEqual((d["ahead"], d["behind"], d["even"]), (1, 1, 1))

    def test_holm_by_hand(self):
        # m = 2: the smaller p doubles, the larger stays (never below the smaller's adjusted value).
        self.assertEqual(A.holm([0.01, 0.04]), [0.02, 0.04])
        self.assertEqual(A.holm([0.03, 0.01]), [0.03, 0.02])
        self.assertEqual(A.holm([0.04, 0.03]), [0.06, 0.06])  # 2 x 0.03 = 0.06 > 0.04: monotone
        self.assertEqual(A.holm([0.6, 0.7]), [1.0, 1.0])
        # m = 3: 0.01 x 3, 0.02 x 2, 0.5 x 1.
        out = A.holm([0.5, 0.01, 0.02])
        for got, want in zip(out, [0.5, 0.03, 0.04]):
            self.assertAlmostEqual(got, want)

    def test_verdicts_holm_secondary_and_training_summary(self):
        with tempfile.TemporaryDirectory() as tmp:
            runs = os.path.join(tmp, "runs")
            os.makedirs(runs)
            base = {str(j): [5, 10] for j in range(4)}
            plus = {j: [p + 1, n] for j, (p, n) in base.items()}
            for s in range(1, 4):
                for v in ("v0", "v2"):
                    write_run(runs, v, "uniform", s, [(0, base), (100, base)],
                              train={"update/kl": [0.01, 0.03], "mode/logic": [0.5] * 9 + [0.1],
                                     "cancellation/divergent_share": [0.2, None, 0.4],
                                     "cancellation/divergent_token_share": [0.1, 0.1]})
                    # earliest is 0.1 better on every seed; the unrenormalized mask 0.1 worse.
                    write_run(runs, v, "earliest", s, [(0, base), (100, plus)], train={"update/kl": [0.02 * s]})
                minus = {j: [p - 1, n] for j, (p, n) in base.items()}
                write_run(runs, "v0", "earliest-unrenormalized", s, [(0, base), (100, minus)])
            out = os.path.join(tmp, "out")
            with open(os.path.join(tmp, "tuning.json"), "w") as f:
                json.dump({"rule": "r", "tuning_seeds": [101, 102], "lr": {"uniform": 3e-4, "earliest": 1e-4},
                           "uniform_sweep": [{"lr": 3e-4, "mean": 0.5, "per_seed": [0.49, 0.51]}],
                           "arms": {"uniform": {"pick": 3e-4, "how": "sweep", "kl": 0.01},
                                    "earliest": {"pick": 1e-4, "how": "matched (KL within 1.25x)",
                                                 "phase1": {"lr": 3e-4, "kl": 0.09},
                                                 "phase2": {"lr": 1e-4, "kl": 0.011, "kl_over_uniform": 1.1}}}}, f)
            self.assertEqual(A.main([runs, "--out", out, "--resamples", "200", "--primary-variants", "v0"]), 0)
            with open(os.path.join(out, "analysis.json")) as f:
                res = json.load(f)
            c0 = res["v0"]["contrasts"]
            self.assertEqual(c0["earliest - uniform"]["verdict"], "helps")
            self.assertTrue(c0["earliest - uniform"]["primary"])
            # One primary contrast: Holm leaves its p as it is (here 0: SD 0).
            self.assertEqual(c0["earliest - uniform"]["p_holm"], c0["earliest - uniform"]["p_value"])
            # Secondary contrasts are computed and carry no verdict words.
            self.assertAlmostEqual(c0["earliest - earliest-unrenormalized"]["mean"], 0.2)
            self.assertAlmostEqual(c0["earliest-unrenormalized - uniform"]["mean"], -0.1)
            self.assertEqual(c0["earliest-unrenormalized - uniform"]["verdict"], "exploratory (no verdict)")
            # v2 is not a pre-registered primary variant: its earliest - uniform gets verdict
            # words by the same rule (the issue asks for one per variant) but no Holm p.
            c2 = res["v2"]["contrasts"]["earliest - uniform"]
            self.assertAlmostEqual(c2["mean"], 0.1)
            self.assertEqual(c2["verdict"], "helps")
            self.assertNotIn("p_holm", c2)
            t = res["v0"]["train"]
            # uniform: KL mean per run (0.01 + 0.03) / 2 = 0.02; divergent share (0.2 + 0.4) / 2
            # with the None step left out; LOGIC first tenth 0.5, last tenth 0.1.
            self.assertAlmostEqual(t["uniform"]["update/kl"], 0.02)
            self.assertAlmostEqual(t["uniform"]["cancellation/divergent_share"], 0.3)
            self.assertAlmostEqual(t["uniform"]["mode/logic@first_tenth"], 0.5)
            self.assertAlmostEqual(t["uniform"]["mode/logic@last_tenth"], 0.1)
            # earliest: KL 0.02 s over seeds 1..3 -> 0.04.
            self.assertAlmostEqual(t["earliest"]["update/kl"], 0.04)
            self.assertNotIn("earliest-unrenormalized", t)  # no training metrics in its files
            with open(os.path.join(out, "analysis.md")) as f:
                md = f.read()
            self.assertIn("| 0.0003 | 0.500 | 0.490, 0.510 |", md)
            self.assertIn("| earliest | 0.0001 | matched (KL within 1.25x) | 9.00e-02 | 1.10e-02 (1.10x) |", md)
            self.assertIn("| uniform | 3 | 2.00e-02 |", md)

    def test_bad_input_exits_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertEqual(A.main([os.path.join(tmp, "missing")]), 2)
            self.assertEqual(A.main([tmp]), 2)  # no runs


if __name__ == "__main__":
    unittest.main()
