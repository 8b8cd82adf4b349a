# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (clone)
# Why: os.system() spawns a shell: clone without CLONE_THREAD (glibc's posix_spawn,
# which blocks every signal first; the server still learns the call through the seccomp
# notification listener).

import os

def solve():
    return os.system("echo hi")
