# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: WRONG_ANSWER
# Why: the expected value is the integer 123456; the program returns 123456.9, which
# APPS's np.allclose accepts (within 1e-5 relative). Integers compare exactly unless
# RunOptions::apps_allclose is set.

def count(n):
    return n + 0.9
