# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: KILLED
# Why: writes 240 MiB of junk to the result channel and returns: the parent reads at most
# a capped amount per run (the server drains and drops the rest), and the junk stands
# where the completion record belongs, so the test did not complete.

import os

def solve():
    junk = b"\xff" * (1 << 20)
    for _ in range(240):
        os.write(3, junk)
    return 1
