# Hostile-sequence corpus (tests/sandbox/hostile_sequence_e2e_test.cpp): the HONEST
# control for end_when_dirty.py. Same function, right only on its first call, but it
# answers (wrongly) on later calls instead of ending its process.
# Expected: f(1) == 2 passes, f(2) == 4, f(3) == 6, f(4) == 8 fail (AssertionError), as in
# MBPP's harness, which runs a program's asserts in one process.
calls = []


def f(x):
    calls.append(x)
    return 2 * x if len(calls) == 1 else -1
