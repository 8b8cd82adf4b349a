# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: TIMEOUT
# Why: ignores SIGXCPU (RLIMIT_CPU's soft signal) and spins: the hard limit or the
# server's CPU accounting kills it.

import signal

signal.signal(signal.SIGXCPU, signal.SIG_IGN)
x = 0
while True:
    x += 1
