# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: control for the limits between the two processes: a list of more than 65,536
# elements comes back from the candidate (there was a count limit of 65,536 that an honest
# program hit, reported as "the candidate closed its channel"; now the limit is 16 MiB
# per message, the same both ways: tests/tracer/executor_assert_processes_e2e_test.cpp
# sends 100,000 elements the other way, with limits that do not depend on the load).

def numbers(n):
    return list(range(n))
