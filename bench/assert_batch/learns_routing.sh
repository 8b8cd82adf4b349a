#!/usr/bin/env bash
# Routing the learns family with egca-batch, one candidate process per program (default)
# against one pair per assert (EGCA_ASSERT_BATCH=0), alternating, on the same samples:
# N programs of the family (its references and near-misses, evenly spaced), 1 worker.
#
#   bench/assert_batch/learns_routing.sh [BUILD_DIR] [N] [ROUNDS]
#
# Prints the wall time of each run and the mode/pass counts of both ways (they must match).
set -euo pipefail
build=${1:-build}
n=${2:-256}
rounds=${3:-2}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/learns-routing-XXXXXX)
python3 "$root/examples/learns/make_family.py" "$work/family" > /dev/null
python3 - "$work" "$n" <<'PY'
import json, os, sys
work, n = sys.argv[1], int(sys.argv[2])
fam = os.path.join(work, "family")
probs, samples = [], []
for split in ("train", "heldout"):
    for line in open(os.path.join(fam, f"{split}.jsonl")):
        p = json.loads(line)
        probs.append(p)
        samples.append(dict(problem_id=f"mbpp/{p['task_id']}", completion=p["code"]))
for line in open(os.path.join(fam, "near_misses.jsonl")):
    m = json.loads(line)
    samples.append(dict(problem_id=m["problem_id"], completion=m["program"]))
step = max(1, len(samples) // n)
samples = samples[::step][:n]
with open(os.path.join(work, "problems.jsonl"), "w") as f:
    for p in probs:
        f.write(json.dumps(dict(task_id=p["task_id"], text=p["text"], code=p["code"], test_list=p["test_list"])) + "\n")
with open(os.path.join(work, "samples.jsonl"), "w") as f:
    for i, s in enumerate(samples):
        s["sample_id"] = str(i)
        f.write(json.dumps(s) + "\n")
PY
run() {  # $1: label, $2: EGCA_ASSERT_BATCH value
  local store="$work/store-$1-$r"
  local t0 t1
  t0=$(date +%s.%N)
  EGCA_ASSERT_BATCH=$2 "$build/tools/egca-batch/egca-batch" run --problems "$work/problems.jsonl" \
    --format mbpp --samples "$work/samples.jsonl" --store "$store" --workers 1 --progress off \
    > "$store.log" 2>&1
  t1=$(date +%s.%N)
  python3 - "$store" "$1" "$t0" "$t1" <<'PY'
import json, sys
store, label, t0, t1 = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
modes, passed, n = {}, 0, 0
for line in open(store + "/results.jsonl"):
    r = json.loads(line)
    if r.get("type") != "sample":
        continue
    n += 1
    modes[r["mode"]] = modes.get(r["mode"], 0) + 1
    passed += r.get("passed", 0)
print(f"{label:<26} {t1 - t0:8.2f} s  {n} samples  {1000 * (t1 - t0) / max(n, 1):7.1f} ms/sample  "
      f"tests passed {passed}  modes {json.dumps(modes, sort_keys=True)}")
PY
}
echo "learns family routing, egca-batch --workers 1, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then run one-process-per-program 1; run one-pair-per-assert 0
  else run one-pair-per-assert 0; run one-process-per-program 1; fi
done
python3 - "$work" <<'PY'
import glob, json, sys
work = sys.argv[1]
def key(store):
    out = {}
    for line in open(store + "/results.jsonl"):
        r = json.loads(line)
        if r.get("type") == "sample":
            out[r["sample_id"]] = (r["mode"], r["passed"], r["reason"], r.get("k_star"),
                                   json.dumps(r.get("earliest")))
    return out
stores = sorted(glob.glob(work + "/store-*-[0-9]*"))
stores = [s for s in stores if not s.endswith(".log")]
base = key(stores[0])
same = all(key(s) == base for s in stores[1:])
print(f"routes (mode, passed, reason, k*, earliest divergence) identical in all {len(stores)} runs: {same}")
PY
echo "work folder: $work"
