pairs = [(2, "b"), (1, "a"), (3, "c")]
pairs.sort(key=lambda p: -p[0])
first = pairs[0][1]
