# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (shmget)
# Why: creates a System V shared-memory segment (it would outlive the run, hold memory
# outside the limit and carry data to the next test): refused by the seccomp filter (an
# IPC namespace as well where namespaces are available).

import ctypes

def solve():
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.shmget(0, 100 << 20, 0o1666)
