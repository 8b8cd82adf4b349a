# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: MEMORY_LIMIT
# Why: keeps 64 MB blocks until RLIMIT_AS makes allocation fail: MemoryError inside the
# harness. (bytes(n) comes from calloc, i.e. fresh zero pages the program never touches,
# so the limit is reached in milliseconds even on a loaded machine; the unit tests cover
# a memory-touching allocation loop.)

def solve():
    hog = []
    while True:
        hog.append(bytes(64 << 20))
