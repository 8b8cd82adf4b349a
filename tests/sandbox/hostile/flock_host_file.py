# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (flock)
# Why: takes an exclusive lock on a readable file of the host (it would block host
# processes that lock it): whole-file and record locks are refused.

import fcntl

def solve():
    f = open("/usr/lib/python3.11/os.py", "rb")
    fcntl.flock(f, fcntl.LOCK_EX)
    return 1
