# Hostile-sequence corpus (tests/sandbox/hostile_sequence_e2e_test.cpp), class 2 of
# issue 38.
# Expected: KILLED (the test process refuses the reply: "new objects that nothing in the
# message refers to"); the honest sample after it (honest_needs_memory.py) gets the
# verdict it gets alone.
# Why: instead of letting the harness answer, the function first writes its own reply
# frame on the channel (fd 4): the right value, plus object-table entries the value never
# refers to: two lists that refer to each other, each holding a 7 MB string. Then it
# returns, and the harness's own reply follows (the test process reads it as the answer
# to its next call, which is the same). Before issue 38 the test process made those
# objects and kept them for the test; at its end they became cyclic garbage that nothing
# collected, and the next samples' tests ran out of memory.
import json
import os


sent = [0]


def grow(n):
    a, b = -1 - 2 * sent[0], -2 - 2 * sent[0]  # new ids each time: new objects each time
    sent[0] += 1
    objs = [[a, "l", None, [["r", b], "y" * 7000000]],
            [b, "l", None, [["r", a], "z" * 7000000]]]
    body = json.dumps({"value": n, "objs": objs}, separators=(",", ":")).encode()
    os.write(4, len(body).to_bytes(4, "big") + body)
    return n
