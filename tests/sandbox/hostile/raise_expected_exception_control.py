# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: control for the exception mapping: a test that expects ValueError from the
# candidate still gets ValueError (only protocol exceptions are rebuilt as RuntimeError).

def parse_positive(text):
    value = int(text)
    if value <= 0:
        raise ValueError("not positive")
    return value
