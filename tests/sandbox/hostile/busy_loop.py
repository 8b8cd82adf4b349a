# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: TIMEOUT
# Why: an endless loop uses its CPU budget; the server kills it (CPU accounting or
# RLIMIT_CPU, else wall clock).

while True:
    pass
