# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: plants a symlink in its private directory pointing to /tmp and writes through it:
# Landlock checks the resolved path (PermissionError).
# Requires: landlock (otherwise the verdict differs; the e2e test skips it).

import os

def solve():
    os.symlink("/tmp/egca_hostile_symlink_target", "link")
    with open("link", "w") as f:
        f.write("escaped")
    return 1
