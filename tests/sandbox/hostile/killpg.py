# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (kill)
# Why: killing its process group (kill(0, ...)) is trapped like any foreign kill.

import os
import signal

def solve():
    os.killpg(0, signal.SIGKILL)
    return 1
