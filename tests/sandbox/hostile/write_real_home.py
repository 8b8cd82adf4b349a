# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: writing into root's real home directory is refused (Landlock / read-only mount /
# not root any more).
# Requires: fs_confined (otherwise the verdict differs; the e2e test skips it).

import os
import pwd

def solve():
    home = pwd.getpwuid(0).pw_dir
    with open(os.path.join(home, "egca_hostile_real_home"), "w") as f:
        f.write("escaped")
    return 1
