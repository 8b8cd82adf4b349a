# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: control for the limits between the two processes: a list of 70,000 elements goes
# to the candidate and comes back (the limit is 16 MiB per message, the same both ways;
# there was a count limit of 65,536 that an honest program hit, reported as "the
# candidate closed its channel").

def echo(xs):
    return xs
