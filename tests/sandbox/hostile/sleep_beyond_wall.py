# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: TIMEOUT
# Why: sleeps far past the wall-clock limit (uses no CPU).

import time

def solve():
    time.sleep(3600)
    return 1
