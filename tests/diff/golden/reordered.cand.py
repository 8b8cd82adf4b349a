def stats(xs):
    count = 0
    total = 0
    for x in xs:
        count += 1
        total += x
    return total, count
