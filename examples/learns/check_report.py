#!/usr/bin/env python3
"""Checks what run.sh wrote (the slow test): every credit target has a learning curve and a
final held-out pass@1, the starting point was measured, the router's spans were compared with
known bug lines, and the plot holds one curve per target. Exits 1 naming what is missing."""
import json
import math
import os
import sys


def fail(what):
    print(f"check_report: {what}", file=sys.stderr)
    sys.exit(1)


def main():
    out = sys.argv[1]
    s = json.load(open(os.path.join(out, "summary.json")))
    if not s["start"]["heldout_pass_at_1"]:
        fail("no starting-point evaluation")
    for t in ("uniform", "earliest", "last", "random"):
        p = s["targets"].get(t)
        if p is None:
            fail(f"no runs for credit.target={t}")
        if not p["final"] or not all(0.0 <= x <= 1.0 for x in p["final"]):
            fail(f"{t}: final pass@1 missing or outside [0, 1]: {p['final']}")
        if any(len(c) < 2 for c in p["per_seed_curves"].values()):
            fail(f"{t}: fewer than two evaluations in a run")
    loc = s["localization"]
    if loc["matched"] == 0:
        fail("no LOGIC sample matched a catalogued near-miss; localization was not measured")
    if not 0 <= loc["hits"]["earliest"] <= loc["matched"]:
        fail("earliest-divergence hits out of range")
    svg = open(os.path.join(out, "pass_at_1.svg")).read()
    if svg.count("<polyline") != 4:
        fail(f"pass_at_1.svg has {svg.count('<polyline')} curves, want 4")
    report = open(os.path.join(out, "report.md")).read()
    for needle in ("Starting point", "Localization", "| earliest |", "| uniform |"):
        if needle not in report:
            fail(f"report.md lacks '{needle}'")
    acc = loc["hits"]["earliest"] / loc["matched"]
    print(f"check_report: ok ({len(s['targets'])} targets, localization {acc:.3f} over {loc['matched']} samples)")
    return 0 if not math.isnan(acc) else 1


if __name__ == "__main__":
    sys.exit(main())
