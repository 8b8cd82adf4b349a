# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: the function under test is a class whose instances equal everything. The test
# process calls it through a proxy; an object of the program's class never leaves the
# candidate process: the test gets a handle, equal only to itself (AssertionError). With
# the test code in the candidate's process the class itself was called there and its
# instance's __eq__ decided the assert.


class solve:
    def __init__(self, x):
        self.x = x

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__
