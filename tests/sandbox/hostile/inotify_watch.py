# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (inotify_init1)
# Why: watches host directories for activity.

import ctypes

def solve():
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(0)
    return libc.inotify_add_watch(fd, b"/tmp", 0xFFF)
