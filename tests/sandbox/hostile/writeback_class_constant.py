# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: KILLED
# Why: the test's validator reads a class constant (Box.LIMIT = 3). The program fills
# the box with five items and sets an instance attribute LIMIT = 10 on its copy, which
# written back would override the constant for the validator. Names the class defines
# are not data a reply may write (KILLED, naming the attribute).

def fill(box):
    box.items = [1, 2, 3, 4, 5]
    box.LIMIT = 10
