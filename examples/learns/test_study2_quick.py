#!/usr/bin/python3
"""study2.py --quick end to end (ctest learns_study2_quick_slow, label slow): every block runs
in the pre-registered order, the pilot and the rates are written before any run that needs
them, every run records its arm's overrides and the egca commit, a second invocation redoes
nothing, and a run whose result is removed is redone from its checkpoint and nothing else.

    test_study2_quick.py WORK_DIR   (EGCA_BUILD_DIR names the build with egca-train)
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import study2  # noqa: E402


def run(work, *extra):
    r = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "study2.py"), "--quick", "--work", work] + list(extra),
                       capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    return r


def main():
    work = os.path.abspath(sys.argv[1])
    shutil.rmtree(work, ignore_errors=True)
    first = run(work)
    assert first.returncode == 0, "first run failed: exit %d" % first.returncode
    results = os.path.join(work, "results")
    runs = sorted(glob.glob(os.path.join(results, "runs", "*.json")))
    tuning = sorted(glob.glob(os.path.join(results, "tuning", "*.json")))
    cands = study2.pilot_candidates(True)
    # quick: 1 tuning seed; uniform's sweep 2 rates + uniform-rate.json; phase 1 for uniform,
    # earliest and the 2 candidates (primary) and 3 secondary configs; phases 2 and 3 for the
    # other 3 + 3 (phase 3 written as "not needed" when phase 2 matched).
    secondary_tuned = [c for c in study2.SECONDARY_ARMS if c not in cands]
    assert len(tuning) == 2 + 1 + (1 + 1 + len(cands) + len(secondary_tuned)) + 2 * (1 + len(cands) + len(
        secondary_tuned)), [os.path.basename(p) for p in tuning]
    # primary: 2 seeds x 3 variants x (start + 3 arms); secondary: 1 seed x 5 arms (its start is v1's).
    assert len(runs) == 2 * 3 * 4 + len(study2.SECONDARY_ARMS), len(runs)
    pilot = json.load(open(os.path.join(results, "pilot.json")))
    assert pilot["signed"] in cands and pilot["signed_sets"] == study2.config_sets(pilot["signed"]), pilot
    chosen = json.load(open(os.path.join(results, "tuning.json")))
    assert set(chosen["lr"]) == {"uniform", "earliest", "signed"}, chosen
    assert chosen["arms"]["signed"]["config"] == pilot["signed"]
    secondary = json.load(open(os.path.join(results, "tuning-secondary.json")))
    assert set(secondary["lr"]) == set(study2.SECONDARY_ARMS), secondary
    log = first.stdout
    # Order: the pilot is chosen before any primary run starts; the primary rates before the
    # secondary block's phase-1 runs.
    assert log.index("pilot: signed =") < log.index("start run:v1-uniform-s1"), log
    assert log.index("learning rates chosen") < log.index("start calib:binary-uniform-p1"), log
    for path in runs:
        r = json.load(open(path))
        assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", r["egca_commit"]), (path, r.get("egca_commit"))
        if r["arm"] == "start":
            continue
        lr_table = chosen["lr"] if r["arm"] in study2.PRIMARY_ARMS else secondary["lr"]
        assert r["lr"] == lr_table[r["arm"]], (path, r["lr"])
        cfg = open(os.path.join(work, "runs", os.path.basename(path)[:-5], "config.yaml")).read()
        sets = study2.config_sets(r["arm"], pilot["signed"])
        for s in sets:  # the run's saved config carries its arm's overrides
            key, value = s.split("=", 1)
            leaf = key.split(".")[-1]
            assert re.search(r"(?m)^\s*%s:\s*\"?%s\"?\s*(#.*)?$" % (re.escape(leaf), re.escape(value)), cfg), (path, s)
        assert [e["step"] for e in r["evals"]] == [1, 2], path
    mtimes = {p: os.path.getmtime(p) for p in runs + tuning}
    again = run(work)
    assert again.returncode == 0 and "nothing to do" in again.stdout, again.stdout
    assert all(os.path.getmtime(p) == t for p, t in mtimes.items())
    lost = os.path.join(results, "runs", "v1-signed-s2.json")
    os.remove(lost)
    third = run(work)
    assert third.returncode == 0, third.stdout
    assert "start run:v1-signed-s2 (resume)" in third.stdout, third.stdout
    assert third.stdout.count("] start ") == 1, third.stdout
    assert os.path.exists(lost)
    print("study2 --quick: OK (%d runs, %d tuning files)" % (len(runs), len(tuning)))


if __name__ == "__main__":
    main()
