# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: KILLED
# Why: writes 48 MiB of junk to the result channel and returns: the parent reads at most
# a capped amount per run (17 MiB untraced; the server drains and drops the rest), and the
# junk stands where the completion record belongs, so the test did not complete. (48 MiB:
# well past the cap; its manifest entry has limits of its own, so that pushing it through
# the pipe on a slow, loaded machine cannot end as TIMEOUT instead.)

import os

def solve():
    junk = b"\xff" * (1 << 20)
    for _ in range(48):
        os.write(3, junk)
    return 1
