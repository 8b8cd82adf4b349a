# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: the test compares two of its own nodes by a value-based __eq__ of its Node class.
# The program patches the class it sees (a mirror made from the test's class statement,
# in the candidate's process) so that every node equals every other, and returns the
# wrong node. The test's own class is untouched (AssertionError).


def find_last(node):
    type(node).__eq__ = lambda self, other: True
    type(node).__hash__ = lambda self: 0
    return node
