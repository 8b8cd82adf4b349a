# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OUTPUT_LIMIT
# Why: prints forever; output beyond the limit ends the run.

while True:
    print("x" * 1000)
