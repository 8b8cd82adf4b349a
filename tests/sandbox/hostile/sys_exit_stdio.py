# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: OK
# Why: exit() after printing is how many competitive-programming solutions end: a normal
# end of a stdin/stdout program.

n = int(input())
print(n * 2)
exit()
