# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: finds the harness's globals through the garbage collector and replaces its `_exec`
# with a no-op, so that the test code it would run after the program never runs and the
# record the harness writes (with the right completion key) says the test completed. The
# asserts run in the test process, which never ran this program: solve(1) returns 0
# (AssertionError). With the test code in the candidate's process this forged a pass.

import gc


def _skip_everything_after_me():
    gc.unfreeze()
    for obj in gc.get_objects():
        if type(obj) is dict and "_run_candidate" in obj and "_exec" in obj:
            obj["_exec"] = lambda *args, **kwargs: None


_skip_everything_after_me()


def solve(x):
    return 0
