# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OUTPUT_LIMIT
# Why: floods stderr (counted together with stdout).

import sys

while True:
    sys.stderr.write("e" * 4096)
