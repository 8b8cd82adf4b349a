# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: WRONG_ANSWER
# Why: the expected value is a list with a repeated element in a given order; the
# program returns a set. Python's == says a set is not a list; the parent's comparison
# used to compare them as sets (order and duplicates lost).

def modes(xs):
    return set(xs)
