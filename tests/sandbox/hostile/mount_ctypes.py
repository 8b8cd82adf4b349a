# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (mount)
# Why: calls mount(2) through ctypes: trapped.

import ctypes

def solve():
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.mount(b"none", b"/mnt", b"tmpfs", 0, None)
