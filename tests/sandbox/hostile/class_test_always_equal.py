# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: the test code defines its own Node class (QuixBugs' shape) and compares the node
# the program returns with one of its own. The program returns an object that equals
# everything. The test's objects reach the program as copies and come back by id; an
# object of the program's class is not plain data and never reaches the test process
# (TypeError). When tests defining classes ran in the candidate's process this passed.


class _Anything:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


def reverse_linked_list(node):
    return _Anything()
