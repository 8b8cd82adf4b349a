# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (fcntl)
# Why: a POSIX record lock (fcntl F_SETLK) on a readable host file, the other way to block
# host processes that lock it.

import fcntl

def solve():
    f = open("/usr/lib/python3.11/os.py", "rb")
    fcntl.lockf(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
    return 1
