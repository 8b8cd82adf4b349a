# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: WRONG_ANSWER
# Why: control: a wrong answer is a wrong answer, not a sandbox event.

def solve(a, b):
    return a - b
