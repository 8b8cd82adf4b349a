# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: KILLED
# Why: ends its process with os._exit(0) in the middle of the test's call: the test
# process sees the channel close before its asserts ran (it records that the candidate
# is gone), and the candidate process left no completion record.

import os


def solve(x):
    os._exit(0)
