# Hostile program for the sandbox corpus (tests/sandbox/hostile/expected.json).
# Expected: RUNTIME_ERROR
# Why: tries to raise its hard address-space limit: the kernel refuses (ValueError from
# resource.setrlimit).

import resource

def solve():
    resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    return 1
