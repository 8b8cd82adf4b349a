def f(x):
    y = 0
    y = x + 1
    z = y * 2
    return z
