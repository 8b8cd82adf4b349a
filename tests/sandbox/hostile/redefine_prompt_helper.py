# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: HumanEval/50's test calls encode_shift, a function the prompt defines. The program
# redefines it as the identity (and decode_shift too), so a test that called the
# candidate's encode_shift would check the candidate against itself. The test process
# runs the problem's own helpers (TestCase::problem_code), so the assert fails.

def encode_shift(s: str):
    return s


def decode_shift(s: str):
    return s
