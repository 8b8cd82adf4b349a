#!/usr/bin/env bash
# What else was tried besides run.sh's setting: one seed of uniform and earliest credit per
# variant (a learning rate, the soft mask, a larger G), same steps and evaluation as run.sh.
# Uses run.sh's family, pre-trained policy and starting point (DIR/runs/start-s<seed>), so
# run that first; --lr is the rate of the soft and G variants.
#
#   examples/learns/sweep.sh [--out DIR] [--seed N] [--targets "uniform earliest"]
#                            [--variants "lr=3e-4 lr=3e-3 soft=0.5 G=16"]
#                            [--steps 16] [--lr 1e-3] [--eval-every 4]   (run.sh's full mode)
# Writes DIR/sweep/<variant>/report.md (report.py) and DIR/sweep/sweep.md (one table).
set -euo pipefail

out="runs/learns"
seed=1
targets="uniform earliest"
variants="lr=3e-4 lr=3e-3 soft=0.5 G=16"
steps=16
lr=1e-3
eval_every=4
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    --variants) variants="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --lr) lr="$2"; shift 2 ;;
    --eval-every) eval_every="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "sweep.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
here="$(cd "$(dirname "$0")" && pwd)"
build="${EGCA_BUILD_DIR:-build}"
train_bin="$build/tools/egca-train/egca-train"
base="$out/runs/start-s$seed/config.yaml"
[[ -f "$base" ]] || { echo "sweep.sh: $base missing; run examples/learns/run.sh --out $out first" >&2; exit 1; }
value() { sed -n "s/^$1: *//p" "$base" | sed 's/ *#.*//; s/^"//; s/"$//'; }
model=$(value model)
eval_limit=$(value "  eval_limit")

for variant in $variants; do
  name="${variant/=/-}"
  dir="$out/sweep/$name"
  rm -rf "$dir" && mkdir -p "$dir/runs"
  ln -s "$(realpath "$out/family")" "$dir/family"
  ln -s "$(realpath "$out/runs/start-s$seed")" "$dir/runs/start-s$seed"
  case "$variant" in
    lr=*) extra=(--set "optim.lr=${variant#lr=}") ;;
    soft=*) extra=(--set "optim.lr=$lr" --set "credit.soft_weight=${variant#soft=}") ;;
    G=*) extra=(--set "optim.lr=$lr" --set "rollout.group_size=${variant#G=}") ;;
    *) echo "sweep.sh: unknown variant '$variant'" >&2; exit 2 ;;
  esac
  for target in $targets; do
    echo "== $variant credit.target=$target seed=$seed"
    "$train_bin" --config "$here/learns.yaml" --set "model=$model" \
      --set "data.train=$out/family/train.jsonl" --set "data.eval=$out/family/heldout.jsonl" \
      --set "data.eval_limit=$eval_limit" --set "optim.steps=$steps" --set "run.eval_every=$eval_every" \
      --set "credit.target=$target" --set "run.seed=$seed" "${extra[@]}" \
      --set "run_dir=$dir/runs/$target-s$seed" --overwrite --quiet
  done
  python3 "$here/report.py" "$dir" --pretrained "$model" \
    --command "examples/learns/sweep.sh --out $out --seed $seed --variants $variant" > /dev/null
done

python3 - "$out/sweep" $variants <<'PY'
import json, os, sys
root, variants = sys.argv[1], sys.argv[2:]
rows = ["| variant | target | pass@1 per evaluation (step: value) | final |", "|---|---|---|---|"]
for v in variants:
    s = json.load(open(os.path.join(root, v.replace("=", "-", 1), "summary.json")))
    start = s["start"]["heldout_pass_at_1"]
    for t, p in s["targets"].items():
        for seed, curve in p["per_seed_curves"].items():
            pts = [f"0: {start[0]:.3f}"] + [f"{st}: {x:.3f}" for st, x in curve]
            rows.append(f"| {v} | {t} | {', '.join(pts)} | {curve[-1][1]:.3f} |")
open(os.path.join(root, "sweep.md"), "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
PY
