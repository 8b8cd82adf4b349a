# Hostile-sequence corpus (tests/sandbox/hostile_sequence_e2e_test.cpp): the HONEST job
# that runs first, as a problem's reference runs just before a candidate (egca-trace's
# reference check, egca.trace, egca-serve's and egca-batch's reference resolution).
# It makes up an answer no other program can compute (16 random bytes, in hex, after the
# prefix "egca" "OUT-") and sends it through every channel the sandbox collects: stdout
# (the answer a stdio test judges), stderr (many copies, so the server's buffers grow),
# and, called, the result record (the value a call test judges).
import os
import sys

PREFIX = "egca" + "OUT-"


def solve():
    answer = PREFIX + os.urandom(16).hex()
    for _ in range(200):
        print(answer, file=sys.stderr)
    print(answer)
    return answer


if __name__ == "__main__":
    solve()
