# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: opens /dev/tty to reach a terminal: refused (Landlock allows writing only
# /dev/null outside the private directory; without it the server has no controlling
# terminal: ENXIO).

def solve():
    with open("/dev/tty", "w") as f:
        f.write("hello terminal")
    return 1
