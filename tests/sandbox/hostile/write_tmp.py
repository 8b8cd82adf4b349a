# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: writing /tmp outside the private directory is refused (Landlock: PermissionError,
# uncaught). With only a mount namespace the write would land in a private tmpfs and
# succeed, so this needs Landlock.
# Requires: landlock (otherwise the verdict differs; the e2e test skips it).

def solve():
    with open("/tmp/egca_hostile_write_tmp", "w") as f:
        f.write("escaped")
    return 1
