def mean_of_squares(xs):
    acc = 0
    for x in xs:
        sq = x * x
        acc += sq
    n = len(xs) - 1
    return acc / n
