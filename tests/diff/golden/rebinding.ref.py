def f(x):
    y = 0
    y = x + 2
    z = y * 2
    return z
