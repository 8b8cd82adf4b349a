# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: writes a 100 MB file in its private directory: past RLIMIT_FSIZE the write fails
# with EFBIG (OSError; SIGXFSZ is ignored in the child).

def solve():
    chunk = b"z" * (1 << 20)
    with open("big.bin", "wb") as f:
        for _ in range(100):
            f.write(chunk)
            f.flush()
    return 1
