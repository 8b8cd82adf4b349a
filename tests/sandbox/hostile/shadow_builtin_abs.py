# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: defines its own `abs` at module level so that HumanEval's float check
# 'abs(candidate(x) - y) < 1e-6' would hold whatever it returns. The test process's
# namespace takes from the program only the names the test reads, and no name of a
# builtin except the function under test (the entry point): `abs` stays the builtin
# (AssertionError). With the test code in the candidate's process the program's `abs`
# was the one the check called, and it passed.

def abs(x):
    return 0


def solve(x):
    return 7.0
