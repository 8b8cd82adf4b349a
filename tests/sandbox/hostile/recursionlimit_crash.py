# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: KILLED
# Why: the recursion limit is lifted and the recursion goes through C (a __repr__
# calling repr()), so the C stack overflows: SIGSEGV, a signal no limit explains.

import sys

sys.setrecursionlimit(10**9)

class Nested:
    def __repr__(self):
        return repr(Nested())

def solve():
    return repr(Nested())
