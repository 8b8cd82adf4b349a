# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (memfd_create)
# Why: an anonymous memory file holds memory the address-space limit does not count.

import os

def solve():
    fd = os.memfd_create("hold")
    os.ftruncate(fd, 1 << 30)
    return fd
