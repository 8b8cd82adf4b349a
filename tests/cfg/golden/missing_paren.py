def f(xs):
    return sum(xs
