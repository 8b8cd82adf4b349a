# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: KILLED
# Why: os._exit(0) at import time: the process ends before its test ran, with no
# completion record.

import os

os._exit(0)

def solve():
    return 1
