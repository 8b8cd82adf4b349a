# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: the program gets a copy of the test's own Node and stores, in place, an object
# that equals everything, for the test to compare after the call. Changes come back into
# the test's objects only as plain data; an object of the program's class cannot be
# written back (TypeError), and the mirror class the program sees is not the test's class
# (patching it changes nothing in the test process).


class _Anything:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


def relabel(node):
    type(node).__eq__ = lambda self, other: True  # the candidate's copy of the class
    node.value = _Anything()
