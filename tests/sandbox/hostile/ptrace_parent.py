# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (ptrace)
# Why: ptrace(PTRACE_ATTACH) on the server through ctypes: trapped.

import ctypes
import os

def solve():
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.ptrace(16, os.getppid(), None, None)
