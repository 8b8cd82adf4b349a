words = ["a", "bb", "ccc"]
lengths = [len(w) for w in words]
index = {w: i for i, w in enumerate(words)}
odd = {n for n in lengths if n % 2}
