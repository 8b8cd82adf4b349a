# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: KILLED
# Why: the test's own validator (Box.is_valid) decides the assert. The program registers
# one of its functions as a handle (the harness's _handle_of, reached through gc) and
# stores it in the test object's attribute `is_valid`, so that the written-back instance
# attribute would shadow the method and the validator's call would be answered by the
# candidate process. A reply may write only data attributes: no name the class defines
# (the test process refuses the reply: KILLED, naming the attribute).

import gc


def _harness():
    # The harness's globals, found through the garbage collector (the candidate process
    # runs in the same interpreter as the harness's candidate side).
    gc.unfreeze()
    for obj in gc.get_objects():
        if type(obj) is dict and "_handle_of" in obj and "_serve_calls" in obj:
            return obj


def _yes(*args, **kwargs):
    return True


def fill(box):
    _harness()["_handle_of"](_yes)
    box.items = [3, 2, 1, 0, 9]
    box.is_valid = _yes
