# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: WRONG_ANSWER
# Why: reaches the harness module's globals through builtins.exit and replaces every
# function that compares or judges (the old harness's _judge, returned_value_matches,
# _values_equal, stdout_matches, ...) with one that reports success, then returns a wrong
# value: the parent compares the returned value, nothing in this process judges.

def solve(a, b):
    g = exit.__class__.__call__.__globals__
    ok = lambda *args, **kwargs: True
    for name in list(g):
        if any(word in name for word in ("judge", "match", "equal", "close", "plain")):
            g[name] = ok
    g["_judge"] = lambda *args, **kwargs: {"outcome": "ok"}
    return a - b
