#!/bin/bash
# The GPU figures of docs/PERFORMANCE.md ("GPU"), in one command on a lent GPU machine (CUDA,
# PyTorch with transformers, g++, cmake, ninja; no package registry). From the repository
# root, with .gpudeps/ (scripts/gpu/fetch-debs.sh) carried along:
#   bash scripts/gpu/bench.sh [OUT_DIR]
# 1. builds scripts/gpu/CMakeLists.txt against the machine's LibTorch (the Python package's);
# 2. train_step: egca's GRPO step (Qwen2.5-0.5B shape, bf16, 8 x 1,024 tokens) against
#    transformers + SDPA, then sampling 8 prompts x 8 samples x 256 new tokens, both sides;
# 3. dist_allreduce on NCCL (one rank: the backend's cost on one GPU; two ranks on the one
#    GPU, which NCCL may refuse: what it says is recorded), against torch.distributed's
#    all_reduce of the same bytes.
# Each part's output goes to OUT_DIR (default $OUT, else /tmp/egca-gpu-out); a part that
# fails is reported and the next one runs.
# EGCA_GPU_PARTS (default "train dist"): which parts run; "quick" runs both programs on the
# tiny shape without the Python side (a build and crash check in a few seconds).
set -u
cd "$(dirname "$0")/../.."
PARTS=${EGCA_GPU_PARTS:-train dist}
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
ninja -C "$B" -k 0 >> "$O/build.log" 2>&1 || { log "build failed"; grep -B2 -A12 "error" "$O/build.log" | head -80; }
# (torch 2.11's pip libtorch.so exports its own std::filesystem::remove_all, which crashed
# egca's programs; they use egca::RemoveTree now. Were another such function to crash,
# LD_PRELOAD="$(g++ -print-file-name=libstdc++.so.6)" makes the system's copies win: it did.)
export TORCH_SHOW_CPP_STACKTRACES=1 NCCL_DEBUG=WARN
export LD_LIBRARY_PATH="$TORCH/lib:$P/usr/lib/x86_64-linux-gnu:$P/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
if [[ " $PARTS " == *" quick "* ]]; then
  "$B/dist_allreduce" --device cuda --shape tiny --steps 2 2>&1 | tee "$O/quick.txt"; log "exit ${PIPESTATUS[0]}"
  "$B/train_step" --device cuda --shape tiny --steps 2 --warmup 1 --no-python 2>&1 | tee -a "$O/quick.txt"; log "exit ${PIPESTATUS[0]}"
fi
if [[ " $PARTS " == *" train "* && -x "$B/train_step" ]]; then
  log train_step
  timeout 300 "$B/train_step" --device cuda --shape qwen2.5-0.5b --dtype bfloat16 --batch 8 --seq 1024 \
    --prompt 64 --steps 10 --warmup 3 --python "$PY" --gen-prompts 8 --gen-samples 8 --gen-tokens 256 \
    --gen-reps 2 2>&1 | tee "$O/train_step.txt"
  log "train_step exit status ${PIPESTATUS[0]}"
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
