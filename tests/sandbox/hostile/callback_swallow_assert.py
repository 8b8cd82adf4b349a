# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: the test passes a checking function of its own; the program calls it, catches
# the AssertionError the test's check raised and returns what the test wants otherwise.
# A failing assert of the test's own code fails the test even if the candidate catches
# it (issue 27's next class: the test's checks inside code the candidate calls).

def run(check):
    try:
        check(1)
    except AssertionError:
        pass
    return 5
