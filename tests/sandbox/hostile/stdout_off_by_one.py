# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: WRONG_ANSWER
# Why: the expected output is the integer 123456; the program prints 123457, which APPS's
# token comparison (np.allclose) accepts. Integer tokens compare exactly by default.

n = int(input())
print(n + 1)
