# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: writes to /dev/shm (shared with the host): refused outside the private directory.
# Requires: fs_confined (otherwise the verdict differs; the e2e test skips it).

def solve():
    with open("/dev/shm/egca_hostile_shm", "w") as f:
        f.write("escaped")
    return 1
