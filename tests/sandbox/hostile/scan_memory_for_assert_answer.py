# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: its assert's expected value ("EGCA-ASSERT-ANSWER:" and 32 hex digits) is written
# only in the test code. The program searches its whole address space (ctypes, the
# regions of /proc/self/maps) for it and returns what it finds. The candidate process is
# never sent the test code (the test process holds it): "not found" (AssertionError).
# With the test code in the candidate's process it was there to find.

import ctypes

PREFIX = ("EGCA-ASSERT" + "-ANSWER:").encode()
HEX = frozenset(b"0123456789abcdef")
CHUNK = 1 << 20


def found_in(data):
    at = data.find(PREFIX)
    while at >= 0:
        digits = data[at + len(PREFIX):at + len(PREFIX) + 32]
        if len(digits) == 32 and all(c in HEX for c in digits):
            return (PREFIX + digits).decode()
        at = data.find(PREFIX, at + 1)
    return None


def solve():
    with open("/proc/self/maps") as f:
        regions = [line.split() for line in f]
    for fields in regions:
        if not fields[1].startswith("r") or (len(fields) > 5 and fields[5].startswith("[v")):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        for at in range(start, end, CHUNK):
            size = min(CHUNK + len(PREFIX) + 32, end - at)
            hit = found_in(ctypes.string_at(at, size))
            if hit is not None:
                return hit
    return "not found"
