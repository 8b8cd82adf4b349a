#!/usr/bin/env bash
# The learns experiment (issue 14): does EGCA's localized credit learn faster than uniform
# GRPO on a task family where a tiny model starts in the near-correct regime?
#
#   examples/learns/run.sh [--quick] [--out DIR] [--family-seed N] [--seeds "1 2 3"]
#                          [--targets "uniform earliest last random"] [--steps N] [--lr LR]
#                          [--cache DIR]
#
# 1. examples/learns/make_family.py writes problems, near-miss catalogue, corpus, tokenizer;
# 2. learns_pretrain pre-trains the starting policy (cached in CACHE/pretrained-<hash of its
#    inputs>, default CACHE runs/learns-cache, reused when present);
# 3. egca-train measures the starting point (lr 0, one step, evaluation) per seed, then runs
#    GRPO for every credit.target and seed with the same budget;
# 4. examples/learns/report.py writes DIR/report.md, DIR/pass_at_1.svg, DIR/summary.json.
# Run from the repository root after scripts/setup.sh (builds the two binaries if missing).
set -euo pipefail

args_given="$*"
quick=0
out=""
family_seed=0
seeds=""
targets="uniform earliest last random"
steps=""
lr=""
cache="runs/learns-cache"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --out) out="$2"; shift 2 ;;
    --family-seed) family_seed="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --lr) lr="$2"; shift 2 ;;
    --cache) cache="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

here="$(cd "$(dirname "$0")" && pwd)"
build="${EGCA_BUILD_DIR:-build}"
train_bin="$build/tools/egca-train/egca-train"
pretrain_bin="$build/examples/learns/learns_pretrain"
if [[ ! -x "$train_bin" || ! -x "$pretrain_bin" ]]; then
  cmake --build "$build" --target egca-train learns_pretrain
fi

# The budget of one GRPO run (the same for every target) and of the evaluation.
if [[ $quick == 1 ]]; then
  out="${out:-runs/learns-quick}"
  : "${seeds:=1}"
  : "${steps:=4}"
  eval_every=2
  eval_limit=16
else
  out="${out:-runs/learns}"
  : "${seeds:=1 2 3}"
  : "${steps:=16}"
  eval_every=4
  eval_limit=48
fi
: "${lr:=3e-4}"
pretrain_args=(--steps 300 --batch 16 --lr 5e-3 --hidden 64 --layers 2 --seed 0 --threads 1)
config="$here/learns.yaml"
mkdir -p "$out"
started=$(date +%s)

echo "== family (seed $family_seed)"
python3 "$here/make_family.py" "$out/family" --seed "$family_seed" > /dev/null
cat "$out/family/family.json"; echo

key=$( (cat "$out/family/corpus.jsonl" "$out/family/tokenizer.json" "$config" "$pretrain_bin"; \
        echo "${pretrain_args[*]}") | sha256sum | cut -c1-12)
mkdir -p "$cache"
pretrained="$cache/pretrained-$key"
if [[ -f "$pretrained/pretrain.json" ]]; then
  echo "== pre-trained policy: reusing $pretrained"
else
  echo "== pre-training -> $pretrained"
  "$pretrain_bin" --config "$config" --corpus "$out/family/corpus.jsonl" \
    --tokenizer "$out/family/tokenizer.json" --out "$pretrained.tmp" "${pretrain_args[@]}"
  rm -rf "$pretrained" && mv "$pretrained.tmp" "$pretrained"
fi

common=(--config "$config" --set "model=$pretrained" --set "data.train=$out/family/train.jsonl"
        --set "data.eval=$out/family/heldout.jsonl" --set "data.eval_limit=$eval_limit"
        --overwrite --quiet)
rm -rf "$out/runs"
for seed in $seeds; do
  echo "== starting point, seed $seed"
  "$train_bin" "${common[@]}" --set optim.lr=0 --set optim.steps=1 --set run.eval_every=1 \
    --set "run.seed=$seed" --set "run_dir=$out/runs/start-s$seed"
done
# Seed-major, so a run cut short still has every target for its first seeds.
for seed in $seeds; do
  for target in $targets; do
    echo "== GRPO credit.target=$target seed=$seed ($steps steps, lr $lr)"
    "$train_bin" "${common[@]}" --set "credit.target=$target" --set "optim.lr=$lr" \
      --set "optim.steps=$steps" --set "run.eval_every=$eval_every" --set "run.seed=$seed" \
      --set "run_dir=$out/runs/$target-s$seed"
  done
done

elapsed=$(( $(date +%s) - started ))
python3 "$here/report.py" "$out" --pretrained "$pretrained" --elapsed "$elapsed" \
  --command "examples/learns/run.sh${args_given:+ $args_given}"
echo "== report: $out/report.md ($elapsed s)"
