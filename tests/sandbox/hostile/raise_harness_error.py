# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: raises the harness's own "malformed test" exception type from the candidate, to turn
# its failing run into an egca error (the sample would drop out of the statistics): a test
# error is believed only from the record written before the candidate ran.

def solve():
    error = exit.__class__.__call__.__globals__["_TestError"]
    raise error("the test is malformed, not my program")
