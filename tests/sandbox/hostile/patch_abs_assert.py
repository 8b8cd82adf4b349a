# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: patches builtins.abs so that HumanEval's float check 'abs(f(x) - y) < 1e-6' would
# always hold: the test code runs with the builtins as they were before the program ran
# (AssertionError).

import builtins

builtins.abs = lambda x: 0

def solve(x):
    return 7.0
