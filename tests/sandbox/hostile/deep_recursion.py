# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: unbounded recursion under the default recursion limit raises RecursionError, an
# ordinary uncaught exception.

def depth(n):
    return depth(n + 1) + 1

def solve():
    return depth(0)
