def outer(n):
    count = 0
    def inner(k):
        nonlocal count
        count += k
        return count
    for i in range(n):
        inner(i)
    return count
