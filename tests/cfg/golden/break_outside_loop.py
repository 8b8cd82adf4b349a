def f(x):
    if x:
        break
    return x
