# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: control for what the test may pass: a lambda and a function of the test's (called
# back in the test process), a namedtuple with its fields and an integer beyond 64 bits
# (large_containers_control.py: containers of more than 65,536 elements).

from collections import namedtuple

Pair = namedtuple("Pair", "lo hi")


def apply(f, xs):
    return [f(x) for x in xs]


def span(p):
    return Pair(p.x, p.y)


def echo(x):
    return x
