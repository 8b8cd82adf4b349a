#!/usr/bin/python3
"""Round-trip latency of two processes over a socketpair (one byte each way), the
floor under every call of an assert test in two processes, with the two processes
free to run on any CPU or pinned (both to CPU 0, or to CPUs 0 and 1).

    /usr/bin/python3 bench/sandbox_throughput/pair_pingpong.py [free|same|diff ...] [--n N]

Prints one line per mode: microseconds per round trip (two wake-ups). Linux only.
"""
import argparse
import os
import socket
import time


def run(mode, n):
    a, b = socket.socketpair()
    cpus = sorted(os.sched_getaffinity(0))
    if mode != "free" and (mode == "diff" and len(cpus) < 2):
        raise SystemExit("pair_pingpong: 'diff' needs two CPUs")
    pid = os.fork()
    if pid == 0:
        if mode == "same":
            os.sched_setaffinity(0, {cpus[0]})
        elif mode == "diff":
            os.sched_setaffinity(0, {cpus[1]})
        fd = b.fileno()
        while True:
            x = os.read(fd, 100)
            if not x or x == b"q":
                os._exit(0)
            os.write(fd, x)
    saved = os.sched_getaffinity(0)
    if mode != "free":
        os.sched_setaffinity(0, {cpus[0]})
    fd = a.fileno()
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            os.write(fd, b"x")
            os.read(fd, 100)
        dt = time.perf_counter() - t0
    finally:
        os.write(fd, b"q")
        os.waitpid(pid, 0)
        os.sched_setaffinity(0, saved)
    return dt / n * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modes", nargs="*", default=["free", "same", "free", "same"])
    parser.add_argument("--n", type=int, default=5000)
    args = parser.parse_args()
    for mode in args.modes:
        if mode not in ("free", "same", "diff"):
            parser.error("mode %r: free, same or diff" % mode)
        print("%s %.1f us per round trip" % (mode, run(mode, args.n)))


if __name__ == "__main__":
    main()
