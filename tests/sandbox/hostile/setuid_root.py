# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: os.setuid(0): children have no privileges to regain (PermissionError after the
# uid drop; EINVAL in an unprivileged user namespace where uid 0 is not mapped).

import os

def solve():
    os.setuid(0)
    return 1
