# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: KILLED
# Why: SystemExit raised inside a call-based test: the call never returned a value, so
# the test did not complete ('exited before its test completed').

import sys

def solve(x):
    sys.exit(0)
