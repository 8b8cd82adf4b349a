def scale(xs):
    t = len(xs)
    ys = [v * t for v in xs]
    return sum(ys)
