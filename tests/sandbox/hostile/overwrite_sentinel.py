# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: tries to overwrite the e2e test's sentinel in /tmp; refused (PermissionError with
# Landlock).
# Requires: landlock (otherwise the verdict differs; the e2e test skips it).

def solve():
    with open("/tmp/egca_hostile_sentinel", "w") as f:
        f.write("overwritten")
    return 1
