# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (execve)
# Why: replaces the process with /bin/sh: execve is trapped.

import os

def solve():
    os.execv("/bin/sh", ["sh", "-c", "echo escaped"])
