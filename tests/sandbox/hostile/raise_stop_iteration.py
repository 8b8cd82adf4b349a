# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: `all(map(is_even, cases))`: a StopIteration raised by the candidate's call, if the
# test process rebuilt it as StopIteration, would end map() early and make all() True.
# Exceptions that iteration and lookup protocols catch by themselves are rebuilt as
# RuntimeError (the verdict still names the candidate's StopIteration).

def is_even(x):
    if x % 2:
        raise StopIteration
    return True
