def count_up(n):
    i = 0
    while i < n:
        yield i
        i += 1
    x = yield from range(3)
    return x
