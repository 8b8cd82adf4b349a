# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: HOME is the private directory (or a path the sandbox makes unwritable): either
# way nothing reaches the real home; the program tolerates both and returns 42.

import os

def solve():
    try:
        with open(os.path.join(os.path.expanduser("~"), "egca_hostile_write_home"), "w") as f:
            f.write("maybe")
    except OSError:
        pass
    return 42
