# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: reads its own /proc/self/cmdline and environ, which a fork of the caller would
# share with it (egca-run --expect, a --tests path): the server erased them, so nothing
# of the caller's is left (the environment is the fixed one).

def solve():
    with open("/proc/self/cmdline", "rb") as f:
        cmdline = f.read().replace(b"\0", b"")
    try:
        with open("/proc/self/environ", "rb") as f:  # not readable at all under the uid drop
            environ = f.read().replace(b"\0", b"")
    except OSError:
        environ = b""
    return [cmdline.decode(), environ.decode()]
