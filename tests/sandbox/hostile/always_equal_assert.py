# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: returns an object whose __eq__ is always True to an MBPP-style assert: the test code
# sees only plain values rebuilt from what the program returned (TypeError: not a plain
# value).

class Anything:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

def solve(x):
    return Anything()
