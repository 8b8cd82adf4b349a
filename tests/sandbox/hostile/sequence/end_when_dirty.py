# Hostile-sequence corpus (tests/sandbox/hostile_sequence_e2e_test.cpp), class 3 of
# issue 38: a program that opts out of one-process semantics.
# Expected: of the asserts f(1) == 2, f(2) == 4, f(3) == 6, f(4) == 8 (one candidate
# process for all, as MBPP's harness runs a program's asserts), only the first passes: no
# more than dirty_state_control.py, which answers wrongly instead of ending.
# Why: its function is right only on its first call (module state it never resets). On
# any later call it ends its own process in the way HOW names (the test substitutes each):
# os._exit(0), SIGKILL to itself, closing the channel to the test process, raising
# MemoryError, flooding stdout, sleeping past the time limit. Before issue 38 each of
# these made the executor rerun that assert first in a fresh process, where the state was
# clean again, and every assert passed. Now the assert during which the process ended
# fails, the asserts after it fail with it (they share that process), and only the
# asserts before it run again (their passes need a process that ended normally).
import os
import signal
import sys
import time

HOW = "exit"
calls = []


def end():
    if HOW == "exit":
        os._exit(0)
    if HOW == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if HOW == "close":
        os.close(4)
        return
    if HOW == "memory":
        raise MemoryError
    if HOW == "flood":
        while True:
            sys.stdout.write("x" * 65536)
    if HOW == "sleep":
        time.sleep(1000)


def f(x):
    calls.append(x)
    if len(calls) > 1:
        end()
    return 2 * x
