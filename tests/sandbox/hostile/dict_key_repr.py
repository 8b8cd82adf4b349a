# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: WRONG_ANSWER
# Why: the expected dict has the string key "(1, 2)"; the program returns a dict keyed by
# the tuple (1, 2). Keys used to match by their string form; they match by value and
# type (an expected key that is an int in text still matches an int key, as APPS does).

def pairs():
    return {(1, 2): 3}
