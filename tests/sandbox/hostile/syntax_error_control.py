# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: SYNTAX_ERROR
# Why: control: a program that does not compile.

def solve(a, b)
    return a + b
