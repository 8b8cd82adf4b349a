# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: MEMORY_LIMIT
# Why: one huge allocation (1 TB) fails at once under RLIMIT_AS: MemoryError.

def solve():
    block = bytearray(10**12)
    return len(block)
