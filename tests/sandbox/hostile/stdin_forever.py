# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: keeps calling input(): stdin is finite, so input() raises EOFError.

while True:
    input()
