def f(x):
    return x
    x += 1
    return x
