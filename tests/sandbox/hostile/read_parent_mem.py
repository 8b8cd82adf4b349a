# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: opens the server's /proc/<ppid>/mem: the server is not dumpable and the child has
# no ptrace capability (PermissionError); as root the view's /proc does not even list the
# server to the child (FileNotFoundError).

import os

def solve():
    with open("/proc/%d/mem" % os.getppid(), "rb") as f:
        return len(f.read(16))
