# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: KILLED
# Why: the test set an instance attribute `check` (a lambda) that its validator calls.
# The program replaces it, on its copy, with a handle to its own always-true function, so
# the validator's call would go to the candidate process. A handle may be written back
# only where the test passed that handle itself (KILLED).

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
    box.items = [3, 2, 1]
    box.check = _yes
