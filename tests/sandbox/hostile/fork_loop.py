# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (clone)
# Why: os.fork() in a loop with the children exiting at once: the first fork is trapped.

import os

def solve():
    for _ in range(100):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    return 1
