values = [3, 1, 2]
total = sum(
    v * 2
    for v in values
)
a = 1; b = a + 1
