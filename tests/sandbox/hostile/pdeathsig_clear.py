# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (prctl)
# Why: clears its parent-death signal to outlive a killed fork server.

import ctypes

def solve():
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(1, 0, 0, 0, 0)  # PR_SET_PDEATHSIG, 0
