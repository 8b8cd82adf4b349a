# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: reads stdin until EOF, which always comes: the answer is printed.

import sys

total = 0
while True:
    chunk = sys.stdin.read(1)
    if not chunk:
        break
    if chunk.isdigit():
        total += int(chunk)
print(total)
