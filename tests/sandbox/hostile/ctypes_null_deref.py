# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: KILLED
# Why: reads address 0 through ctypes: SIGSEGV.

import ctypes

def solve():
    return ctypes.string_at(0)
