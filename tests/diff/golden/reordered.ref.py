def stats(xs):
    total = 0
    count = 0
    for x in xs:
        total += x
        count += 1
    return total, count
