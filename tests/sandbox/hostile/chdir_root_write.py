# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: changes to / and writes a file there: refused outside the private directory.
# Requires: fs_confined (otherwise the verdict differs; the e2e test skips it).

import os

def solve():
    os.chdir("/")
    with open("egca_hostile_root_file", "w") as f:
        f.write("escaped")
    return 1
