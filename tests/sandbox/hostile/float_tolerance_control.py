# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: control for the numeric rules: two floats still compare with the documented
# tolerance (0.1 + 0.2 against 0.3), as value and as a printed token.

def add(a, b):
    print(a + b)
    return a + b
