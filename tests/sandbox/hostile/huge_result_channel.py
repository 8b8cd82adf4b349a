# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: KILLED
# Why: writes 48 MiB of junk to the result channel and returns: the parent reads at most
# a capped amount per run (17 MiB untraced; the server drains and drops the rest), and the
# junk stands where the completion record belongs, so the test did not complete. (48 MiB,
# not more: well past the cap, and written well within the corpus's 2 s wall limit on a
# slow, loaded machine.)

import os

def solve():
    junk = b"\xff" * (1 << 20)
    for _ in range(48):
        os.write(3, junk)
    return 1
