# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (clone)
# Why: tries to replace the SIGSYS handler (refused) and then forks: the violation is
# still reported and named.

import os
import signal

def solve():
    try:
        signal.signal(signal.SIGSYS, lambda signum, frame: None)
    except (OSError, ValueError):
        pass
    os.fork()
    return 1
