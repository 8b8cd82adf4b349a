# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: deletes everything it can in its working directory and tries the parent; only its
# own private directory is affected.

import os
import shutil

def solve():
    for name in os.listdir("."):
        try:
            if os.path.isdir(name) and not os.path.islink(name):
                shutil.rmtree(name)
            else:
                os.remove(name)
        except OSError:
            pass
    try:
        for name in os.listdir(".."):
            try:
                shutil.rmtree(os.path.join("..", name))
            except OSError:
                pass
    except OSError:
        pass
    return 7
