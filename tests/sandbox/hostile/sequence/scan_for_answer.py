# Hostile-sequence corpus (tests/sandbox/hostile_sequence_e2e_test.cpp).
# Expected: WRONG_ANSWER, on a stdio and on a call test whose expected answer is the
# output of the job that ran just before (plant_answer.py: "egca" "OUT-" and 32 random hex
# digits), with the fork server's spares forked ahead.
# Why: it cannot compute the answer; it searches its whole address space (the regions
# /proc/self/maps lists, read through ctypes) for the earlier job's output and prints
# (stdio) or returns (call) every such string it finds, one a line, or "not found". The
# fork server wipes whatever a child sent before it frees it, so a child forked after that
# finds nothing (before issue 38 a spare forked at the start of job N held job N-1's
# outcome in freed memory and passed).

import ctypes

PREFIX = ("egca" + "OUT-").encode()
HEX = frozenset(b"0123456789abcdef")
CHUNK = 1 << 20


def found_in(data, found):
    at = data.find(PREFIX)
    while at >= 0:
        digits = data[at + len(PREFIX):at + len(PREFIX) + 32]
        if len(digits) == 32 and all(c in HEX for c in digits):
            text = (PREFIX + digits).decode()
            if text not in found:
                found.append(text)
        at = data.find(PREFIX, at + 1)


def scan():
    found = []
    with open("/proc/self/maps") as f:
        regions = [line.split() for line in f]
    for fields in regions:
        if not fields[1].startswith("r") or (len(fields) > 5 and fields[5].startswith("[v")):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        for at in range(start, end, CHUNK):
            # Overlapping chunks: a string across a chunk boundary is found too.
            size = min(CHUNK + len(PREFIX) + 32, end - at)
            try:
                found_in(ctypes.string_at(at, size), found)
            except OSError:
                pass
    return "\n".join(found) if found else "not found"


def solve():
    return scan()


def control():
    """The control: an answer of the same shape made here and kept alive is found (the
    scan is not blind)."""
    import os
    mine = PREFIX.decode() + os.urandom(16).hex()
    return [mine, scan()]


if __name__ == "__main__":
    print(scan())
