# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: KILLED
# Why: writes a forged "completed" record (guessing the completion key) to the result
# channel and exits before its asserts run: the record's key does not match, so the
# test did not complete.

import os
import struct

def _varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out

record = b"\x08\x01" + _varint((20 << 3) | 1) + struct.pack("<Q", 1)
frame = b"EGR1" + struct.pack("<I", len(record)) + record
os.write(3, frame)
os._exit(0)

def solve(x):
    return 0
