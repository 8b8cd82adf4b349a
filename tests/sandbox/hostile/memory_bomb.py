# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: MEMORY_LIMIT
# Why: the list grows until RLIMIT_AS makes allocation fail: MemoryError inside the
# harness.

def solve():
    hog = []
    while True:
        hog.append(bytearray(1 << 20))
