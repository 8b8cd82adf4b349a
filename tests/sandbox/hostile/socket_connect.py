# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: VIOLATION (socket)
# Why: creating an AF_INET socket is denied by seccomp (named 'socket'); there is no
# network in any case.

import socket

def solve():
    s = socket.create_connection(("127.0.0.1", 22), timeout=1)
    s.close()
    return 1
