# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: control: a correct program passes inside the sandbox.

def solve(a, b):
    return a + b
