# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: the test iterates an object of its own whose __getitem__ asks the candidate; the
# old sequence protocol stops at IndexError, so an IndexError rebuilt as such would end
# the loop early with every check so far passed. It is rebuilt as RuntimeError.

def check(i):
    if i >= 2:
        raise IndexError(i)
    return True
