# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION
# Why: os.system() spawns a shell: clone without CLONE_THREAD (glibc's posix_spawn) is
# trapped. posix_spawn blocks all signals first, so the kernel kills with SIGSYS without
# the handler naming the call: the detail is 'unknown'.

import os

def solve():
    return os.system("echo hi")
