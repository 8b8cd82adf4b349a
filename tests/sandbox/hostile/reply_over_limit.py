# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: a reply over the per-message limit between the two processes is reported as that
# limit (OverflowError naming the sizes), not as the candidate closing its channel.

def text(n):
    return "x" * n
