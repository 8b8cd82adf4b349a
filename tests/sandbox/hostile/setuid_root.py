# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: os.setuid(0): children have no privileges to regain (PermissionError).

import os

def solve():
    os.setuid(0)
    return 1
