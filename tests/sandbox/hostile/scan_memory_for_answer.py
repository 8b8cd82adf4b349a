# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: WRONG_ANSWER
# Why: its test expects a random-looking string ("EGCA-HOSTILE-ANSWER:" and 32 hex digits)
# that only the manifest holds, and the process running the corpus parsed the manifest
# before it started its executor. The program reads its whole address space through
# ctypes (the regions /proc/self/maps lists) and returns the first such string it finds.
# A fork server forked from that process would hold it (the control in
# tests/tracer/executor_caller_memory_e2e_test.cpp passes this way); the executor's
# server is its own program (egca-py-server) and holds nothing of the caller's.

import ctypes

PREFIX = ("EGCA-HOSTILE" + "-ANSWER:").encode()
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
            # Overlapping chunks: a string across a chunk boundary is found too.
            size = min(CHUNK + len(PREFIX) + 32, end - at)
            hit = found_in(ctypes.string_at(at, size))
            if hit is not None:
                return hit
    return "not found"
