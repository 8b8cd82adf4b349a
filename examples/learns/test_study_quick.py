#!/usr/bin/python3
"""study.py --quick end to end (ctest learns_study_quick_slow, label slow): every block runs,
every run writes its result in analyze.py's format, a second invocation redoes nothing, a
run whose result is removed is redone from its checkpoint (egca-train --resume) and nothing
else, and analyze.py reads the results.

    test_study_quick.py WORK_DIR   (EGCA_BUILD_DIR names the build with egca-train)
"""
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def study(work, *extra):
    r = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "study.py"), "--quick", "--work", work] + list(extra),
                       capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    return r


def main():
    work = os.path.abspath(sys.argv[1])
    shutil.rmtree(work, ignore_errors=True)
    first = study(work)
    assert first.returncode == 0, "first run failed: exit %d" % first.returncode
    results = os.path.join(work, "results")
    runs = sorted(glob.glob(os.path.join(results, "runs", "*.json")))
    tuning = sorted(glob.glob(os.path.join(results, "tuning", "*.json")))
    # quick (amendment 4): uniform's sweep 2 rates x 1 seed, KL calibration 5 arms (phase 1) +
    # 4 arms (phase 2) + uniform's chosen rate; primary 2 seeds x 2 variants x (start + 2 arms);
    # secondary 1 seed x v0 x 3 arms; v2 1 seed x (start + 2 arms).
    assert len(tuning) == 2 + 5 + 4 + 1, tuning
    assert len(runs) == 2 * 2 * 3 + 3 + 3, len(runs)
    chosen = json.load(open(os.path.join(results, "tuning.json")))
    assert set(chosen["lr"]) == {"uniform", "earliest", "earliest-unrenormalized", "last", "random"}, chosen
    uniform_rate = json.load(open(os.path.join(results, "tuning", "uniform-rate.json")))
    assert chosen["lr"]["uniform"] == uniform_rate["lr"] and uniform_rate["lr"] in (3e-4, 1e-3), uniform_rate
    for arm, row in chosen["arms"].items():
        if arm == "uniform":
            continue
        # Phase 2 ran at the lr^2-law rate from phase 1; its KL was measured (> 0) and recorded.
        p1 = json.load(open(os.path.join(results, "tuning", "calib-%s-p1-s101.json" % arm)))
        p2 = json.load(open(os.path.join(results, "tuning", "calib-%s-p2-s101.json" % arm)))
        assert p1["lr"] == uniform_rate["lr"] and p1["evals"] == [] and len(p1["train"]["steps"]) == 2, p1
        assert abs(p2["lr"] - row["phase2"]["lr"]) < 1e-12 * max(1.0, p2["lr"]), (p2["lr"], row)
        # The quick policies barely move (2 steps of a 20-step pre-training: often every group's
        # rewards are equal, KL 0); the rate rules themselves are tested in test_study_unit.py.
        kl_u = chosen["arms"]["uniform"]["kl"]
        assert row["phase1"]["kl"] >= 0 and row["phase2"]["kl"] >= 0 and row["pick"] > 0, row
        want = uniform_rate["lr"] * (kl_u / row["phase1"]["kl"]) ** 0.5 if kl_u > 0 and row["phase1"]["kl"] > 0 \
            else uniform_rate["lr"]
        assert abs(row["phase2"]["lr"] - want) <= 1e-12 * want, (row, want)
    for path in runs:
        r = json.load(open(path))
        for k in ("variant", "arm", "seed", "evals"):
            assert k in r, (path, k)
        if r["arm"] == "start":
            assert [e["step"] for e in r["evals"]] == [0], path
            assert all(v[1] == 4 for v in r["evals"][0]["problems"].values()), path  # final samples
        else:
            assert [e["step"] for e in r["evals"]] == [1, 2], (path, [e["step"] for e in r["evals"]])
            assert all(v[1] == 2 for v in r["evals"][0]["problems"].values()), path  # midway samples
            assert all(v[1] == 4 for v in r["evals"][1]["problems"].values()), path
            assert r["lr"] == chosen["lr"][r["arm"]], path
            assert len(r["train"]["steps"]) == 2 and "cancellation/divergent_share" in r["train"], path
            loc = r["localization"]  # scored from the run's rollout dump
            assert loc["matched"] <= loc["logic"] and all(
                loc["hits"][w] + loc["missing"][w] <= loc["matched"] for w in ("earliest", "last", "random")), loc
        assert len(r["evals"][-1]["problems"]) == 8, path
    # Paired design: the arms of a seed share the start's model and the evaluation problems.
    v0 = {json.load(open(p))["arm"]: json.load(open(p)) for p in runs if os.path.basename(p).startswith("v0-")
          and p.endswith("-s1.json")}
    assert set(v0["uniform"]["evals"][-1]["problems"]) == set(v0["earliest"]["evals"][-1]["problems"])
    mtimes = {p: os.path.getmtime(p) for p in runs + tuning}
    # A second invocation has nothing to do.
    again = study(work)
    assert again.returncode == 0 and "nothing to do" in again.stdout, again.stdout
    assert all(os.path.getmtime(p) == t for p, t in mtimes.items())
    # A lost result is redone from the run's checkpoint, and only it.
    lost = os.path.join(results, "runs", "v0-earliest-s2.json")
    os.remove(lost)
    third = study(work)
    assert third.returncode == 0, third.stdout
    assert "start run:v0-earliest-s2 (resume)" in third.stdout, third.stdout
    assert third.stdout.count("] start ") == 1, third.stdout
    assert os.path.exists(lost)
    assert all(os.path.getmtime(p) == t for p, t in mtimes.items() if p != lost)
    # analyze.py reads what the driver wrote.
    out = os.path.join(work, "analysis")
    a = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "analyze.py"), os.path.join(results, "runs"),
                        "--out", out, "--resamples", "200"], capture_output=True, text=True)
    assert a.returncode == 0, a.stdout + a.stderr
    assert os.path.exists(os.path.join(out, "analysis.json"))
    print("study --quick: OK (%d runs, %d tuning runs)" % (len(runs), len(tuning)))


if __name__ == "__main__":
    main()
