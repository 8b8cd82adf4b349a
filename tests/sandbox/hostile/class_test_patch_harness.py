# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: as patch_harness_skip_asserts.py, for a test that defines its own class: it finds
# the harness's globals through the garbage collector and replaces `_exec` with a no-op,
# so that the test code would never run in its process. The test code runs in the test
# process, which never ran this program (AssertionError: the list is not reversed). When
# tests defining classes ran in the candidate's process this forged a pass.

import gc


def _skip_everything_after_me():
    gc.unfreeze()
    for obj in gc.get_objects():
        if type(obj) is dict and "_run_candidate" in obj and "_exec" in obj:
            obj["_exec"] = lambda *args, **kwargs: None


_skip_everything_after_me()


def reverse_linked_list(node):
    return node
