# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: reads /etc/shadow: children never run as root (uid drop) or are unprivileged
# (PermissionError), and with a mount namespace the file is not in their root at all
# (FileNotFoundError).

def solve():
    with open("/etc/shadow") as f:
        return f.read()
