# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION
# Why: subprocess.run() forks (vfork/clone): trapped.

import subprocess

def solve():
    return subprocess.run(["/bin/ls", "/"], capture_output=True).returncode
