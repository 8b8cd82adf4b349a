# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (kill)
# Why: kill() of any pid but its own is trapped; the server survives.

import os

def solve():
    os.kill(os.getppid(), 9)
    return 1
