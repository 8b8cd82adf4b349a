# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: starts threads until the thread limit (RLIMIT_NPROC of the per-server uid, else
# the address-space limit) makes Thread.start raise RuntimeError.

import threading
import time

def solve():
    threads = []
    for _ in range(100000):
        t = threading.Thread(target=time.sleep, args=(3600,), daemon=True)
        t.start()
        threads.append(t)
    return len(threads)
