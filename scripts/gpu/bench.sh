#!/bin/bash
# The GPU figures of docs/PERFORMANCE.md ("GPU"), in one command on a lent GPU machine (CUDA,
# PyTorch with transformers, g++, cmake, ninja; no package registry). From the repository
# root, with .gpudeps/ (scripts/gpu/fetch-debs.sh) carried along:
#   bash scripts/gpu/bench.sh [OUT_DIR]
# 1. builds scripts/gpu/CMakeLists.txt against the machine's LibTorch (the Python package's);
# 2. train_step: egca's GRPO step (Qwen2.5-0.5B shape, bf16, 8 x 1,024 tokens) against
#    transformers + SDPA, then sampling 8 prompts x 8 samples (64 rows) x 256 new tokens,
#    both sides, egca with the static KV cache and CUDA graphs (issue 39's targets: step
#    >= 1.0x transformers' speed at <= its peak memory; sampling >= 3x generate);
#    then egca before/after issue 39 in one run (train_step --compare: step, peak memory,
#    sampling), sampling without CUDA graphs, and a profile of 2 steps and one Generate
#    (Chrome traces in OUT_DIR, top ops summarized in profile.txt);
# 3. dist_allreduce on NCCL (one rank: the backend's cost on one GPU; two ranks on the one
#    GPU, which NCCL may refuse: what it says is recorded), against torch.distributed's
#    all_reduce of the same bytes.
# Each part's output goes to OUT_DIR (default $OUT, else /tmp/egca-gpu-out); a part that
# fails is reported and the next one runs.
# EGCA_GPU_PARTS (default "train compare profile dist"): which parts run; "quick" runs both
# programs on the tiny shape without the Python side (a build and crash check in a few
# seconds). The programs run without LD_PRELOAD: the RemoveTree fix (issue 39 asks for it
# to be seen working on a GPU) shows as "removed temporary checkpoint: yes" in each log.
# If the build fails with CUDA graphs (sampler.cpp, never compiled against CUDA before),
# it is rebuilt once with -DEGCA_CUDA_GRAPHS=OFF and that is recorded in build.log.
set -u
cd "$(dirname "$0")/../.."
PARTS=${EGCA_GPU_PARTS:-train compare profile dist}
O=${1:-${OUT:-/tmp/egca-gpu-out}}
mkdir -p "$O"
log() { echo "[gpu $(date +%T)] $*"; }
PY=$(command -v python3)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee "$O/gpu.txt"
$PY -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__, torch.cuda.get_device_name())' 2>&1 | tee -a "$O/gpu.txt"
TORCH=$($PY -c 'import torch, os; print(os.path.dirname(torch.__file__))')
P=/tmp/egca-gpu-deps
rm -rf "$P" && mkdir -p "$P"
for f in .gpudeps/*.deb; do dpkg -x "$f" "$P"; done
B=/tmp/egca-gpu-build
log configure
cmake -S scripts/gpu -B "$B" -G Ninja -DTorch_DIR="$TORCH/share/cmake/Torch" -DEGCA_DEPS_PREFIX="$P/usr" \
  -DEGCA_TORCH_PYTHON="$PY" > "$O/build.log" 2>&1 || { log "configure failed"; tail -30 "$O/build.log"; }
log build
if ! ninja -C "$B" -k 0 >> "$O/build.log" 2>&1; then
  log "build failed"; grep -B2 -A12 "error" "$O/build.log" | head -80
  log "rebuilding without CUDA graphs (EGCA_CUDA_GRAPHS=OFF)"
  echo "=== rebuild with -DEGCA_CUDA_GRAPHS=OFF" >> "$O/build.log"
  cmake "$B" -DEGCA_CUDA_GRAPHS=OFF >> "$O/build.log" 2>&1
  ninja -C "$B" -k 0 >> "$O/build.log" 2>&1 || log "build failed again"
fi
# (torch 2.11's pip libtorch.so exports its own std::filesystem::remove_all, which crashed
# egca's programs; they use egca::RemoveTree now, and run here WITHOUT LD_PRELOAD to show
# it. Were another such function to crash, LD_PRELOAD="$(g++ -print-file-name=libstdc++.so.6)"
# makes the system's copies win: it did, in session 12.)
# Whether a program left its temporary checkpoint behind (RemoveTree at its end).
leftovers() { ls -d /tmp/egca_train_step_* 2>/dev/null | wc -l; }
export TORCH_SHOW_CPP_STACKTRACES=1 NCCL_DEBUG=WARN
export LD_LIBRARY_PATH="$TORCH/lib:$P/usr/lib/x86_64-linux-gnu:$P/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
if [[ " $PARTS " == *" quick "* ]]; then
  "$B/dist_allreduce" --device cuda --shape tiny --steps 2 2>&1 | tee "$O/quick.txt"; log "exit ${PIPESTATUS[0]}"
  "$B/train_step" --device cuda --shape tiny --steps 2 --warmup 1 --no-python 2>&1 | tee -a "$O/quick.txt"; log "exit ${PIPESTATUS[0]}"
fi
Q="--device cuda --shape qwen2.5-0.5b --dtype bfloat16 --batch 8 --seq 1024 --prompt 64"
G="--gen-prompts 8 --gen-samples 8 --gen-tokens 256"
if [[ " $PARTS " == *" train "* && -x "$B/train_step" ]]; then
  log "train_step against transformers (static KV cache, CUDA graphs)"
  before=$(leftovers)
  timeout 300 "$B/train_step" $Q --steps 10 --warmup 3 --python "$PY" $G --gen-reps 2 --cuda-graph auto \
    2>&1 | tee "$O/train_step.txt"
  log "train_step exit status ${PIPESTATUS[0]}"
  [[ $(leftovers) == "$before" ]] && r=yes || r=no
  echo "removed temporary checkpoint: $r (no LD_PRELOAD)" | tee -a "$O/train_step.txt"
fi
if [[ " $PARTS " == *" compare "* && -x "$B/train_step" ]]; then
  log "train_step --compare: before/after issue 39, 2 rounds"
  timeout 400 "$B/train_step" $Q --steps 5 --warmup 2 --compare --rounds 2 $G --gen-reps 1 --cuda-graph auto \
    2>&1 | tee "$O/compare.txt"
  log "compare exit status ${PIPESTATUS[0]}"
  log "sampling without CUDA graphs (static KV cache only)"
  timeout 200 "$B/train_step" $Q --steps 1 --warmup 0 --no-python $G --gen-reps 2 --cuda-graph off \
    2>&1 | tail -3 | tee -a "$O/compare.txt"
fi
if [[ " $PARTS " == *" profile "* && -x "$B/train_step" ]]; then
  log "profile: 2 steps and one Generate"
  timeout 200 "$B/train_step" $Q --steps 1 --warmup 1 --no-python $G --gen-reps 1 --cuda-graph auto \
    --profile "$O/profile_step.json" > "$O/profile_run.txt" 2>&1
  log "profile exit status $?"
  for f in "$O/profile_step.json" "$O/profile_step.json.sampling.json"; do
    [[ -f "$f" ]] || continue
    $PY - "$f" <<'PYEOF' 2>&1 | tee -a "$O/profile.txt"
import json, sys, collections
path = sys.argv[1]
ev = json.load(open(path))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
tot, cnt = collections.Counter(), collections.Counter()
for e in ev:
    if e.get("ph") == "X":
        tot[e["name"]] += e.get("dur", 0); cnt[e["name"]] += 1
print(f"== {path}: top ops by host time (us, inclusive, calls)")
for name, us in tot.most_common(25):
    print(f"{us:12.0f} {cnt[name]:7d}  {name}")
PYEOF
  done
fi
if [[ " $PARTS " == *" dist "* && -x "$B/dist_allreduce" ]]; then
  log "dist_allreduce, 1 rank"
  timeout 120 "$B/dist_allreduce" --device cuda --shape qwen2.5-0.5b --dtype bfloat16 --batch 4 --seq 512 \
    --steps 5 --json "$O/nccl1.json" 2>&1 | tee "$O/nccl.txt"
  log "dist_allreduce exit status ${PIPESTATUS[0]}"
  # The baseline reduces as many bytes as egca's run did (none to compare with if it failed).
  if BYTES=$($PY -c "import json; print(json.load(open('$O/nccl1.json'))['gradient_bytes'])" 2>/dev/null); then
    log "torch.distributed all_reduce, 1 rank, $BYTES bytes"
    timeout 60 $PY bench/dist_step/allreduce_baseline.py --bytes "$BYTES" 2>&1 | tee -a "$O/nccl.txt"
  else
    log "no baseline: dist_allreduce wrote no $O/nccl1.json"
  fi
  log "dist_allreduce, 2 ranks on one GPU"
  CUDA_VISIBLE_DEVICES=0 timeout 90 $PY -m torch.distributed.run --nproc_per_node 2 --no-python \
    "$B/dist_allreduce" --device cuda --shape small --dtype bfloat16 --steps 3 2>&1 | tail -60 | tee -a "$O/nccl.txt"
fi
log done
