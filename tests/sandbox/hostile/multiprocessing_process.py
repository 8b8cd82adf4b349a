# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION
# Why: multiprocessing.Process(...).start() forks: trapped.

import multiprocessing

def work():
    pass

def solve():
    p = multiprocessing.get_context("fork").Process(target=work)
    p.start()
    p.join()
    return 1
