# Hostile-sequence corpus (tests/sandbox/hostile_sequence_e2e_test.cpp): the HONEST
# sample of class 2. Its test (the data set's, not the program's) needs half of the test
# process's address space: it fills a bytearray of 512 MiB before it checks the answer.
# Expected: OK, alone and after any number of hostile samples (leave_cycles.py,
# forge_unreached_entries.py) in the same reused test process.


def double(x):
    return 2 * x
