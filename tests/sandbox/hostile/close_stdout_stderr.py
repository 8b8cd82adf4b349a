# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: closes fds 1 and 2; the result travels on the result channel, so the correct
# answer still counts.

import os

def solve(a, b):
    os.close(1)
    os.close(2)
    return a + b
