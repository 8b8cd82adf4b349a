def countdown(n):
    while n > 0:
        yield n
        n -= 1


seen = []
for value in countdown(2):
    seen.append(value)
