# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: control: integers beyond 64 bits in the tests file (arguments, and an expected
# value beyond double range) reach the program and the comparison exactly.

def mul(a, b):
    return a * b
