counts = {}
tags = set()
for word in ["b", "a", "b"]:
    counts[word] = counts.get(word, 0) + 1
    tags.add(word.upper())
del counts["a"]
tags.discard("A")
