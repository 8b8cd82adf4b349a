# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (clone)
# Why: fork() is denied by the seccomp filter (clone without CLONE_THREAD is trapped and
# named).

import os

def solve():
    while True:
        os.fork()
