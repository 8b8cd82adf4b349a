# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: TIMEOUT
# Why: ignores SIGTERM/SIGINT/SIGHUP and loops: the server kills with SIGKILL, which
# cannot be ignored.

import signal

for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)
while True:
    pass
