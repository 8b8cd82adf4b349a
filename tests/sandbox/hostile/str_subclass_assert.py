# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: a str subclass whose __eq__ always returns True: the proxy rebuilds it as the plain
# str it holds ("wrong"), which does not equal "right" (AssertionError).

class Yes(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__

def solve():
    return Yes("wrong")
