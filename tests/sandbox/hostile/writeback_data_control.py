# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: control for the write-back rules: an honest program changes the test object's
# data attributes in place (the list the test made, and a new attribute of its own);
# they come back into the test's object and the validator passes.

def fill(box):
    box.items.extend([1, 2])
    box.items.append(3)
    box.note = "filled"
