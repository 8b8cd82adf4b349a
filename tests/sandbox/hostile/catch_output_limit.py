# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OUTPUT_LIMIT
# Why: prints the right answer, then whitespace past the output limit, catching whatever
# is raised (the old harness raised an exception and a caught one left the captured output
# a whitespace-padded right answer): the sandbox counts the bytes at the descriptor.

import sys

print(42)
for _ in range(4096):
    try:
        sys.stdout.write(" " * 1024)
        sys.stdout.flush()
    except BaseException:
        pass
