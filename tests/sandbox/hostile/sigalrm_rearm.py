# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: TIMEOUT
# Why: re-arms SIGALRM from its handler while sleeping, trying to stay alive; the wall
# clock ends it.

import signal
import time

def rearm(signum, frame):
    signal.alarm(1)

signal.signal(signal.SIGALRM, rearm)
signal.alarm(1)
while True:
    time.sleep(0.1)
