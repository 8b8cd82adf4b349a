# Hostile-sequence corpus (tests/sandbox/hostile_sequence_e2e_test.cpp), class 2 of
# issue 38: a sample that leaves the reused test process full for the next one.
# Expected: its own assert passes (its answers are right); the honest sample after it
# (honest_needs_memory.py) gets the verdict it gets alone.
# Why: each call returns a list that holds a 15 MB string and itself. The test process
# rebuilds it from the object table (a self-referential list is legal data), the assert
# reads its length, and the list becomes cyclic garbage, which reference counting never
# frees. Before issue 38 the reused test process reset its state between tests but never
# collected: a few such samples left it near its address-space limit, and the next
# sample's test got MemoryError. Now every reset collects, and a session whose address
# space stays above its start retires.


def grow(n):
    items = ["x" * n]
    items.append(items)
    return items
