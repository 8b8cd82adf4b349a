def scale(xs):
    t = len(xs) + 1
    ys = [v * t for v in xs]
    return sum(ys)
