# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: HumanEval's check(candidate) with an always-equal object hidden in a list and a
# str subclass whose __eq__ is always True: containers are rebuilt, subclasses read
# through their base type (the list's element is not plain: TypeError).

class Yes(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__

class Anything:
    def __eq__(self, other):
        return True

def solve(x):
    if x == 1:
        return Yes("wrong")
    return [Anything()]
