# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: KILLED
# Why: finds the page the sandbox shares with its children, marks "isolation failed" and a
# violation in it and exits with the isolation-failure code, to turn its run into an egca
# error or a violation: the server believes a setup failure only before the isolation
# marker, and the violation page only when no seccomp listener reported.

import ctypes
import os
import struct

def solve():
    for line in open("/proc/self/maps"):
        fields = line.split()
        start, end = (int(x, 16) for x in fields[0].split("-"))
        if end - start <= 8192 and fields[1] == "rw-s":
            record = struct.pack("<IiI", 0x53595331, 57, 1) + b"forged setup failure\0"
            ctypes.memmove(start, record, len(record))
    os._exit(121)
