# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (setsid)
# Why: tries to leave its session/process group: setsid is trapped.

import os

def solve():
    os.setsid()
    return 1
