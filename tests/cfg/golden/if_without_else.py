def clamp(x, hi):
    if x > hi:
        x = hi
    return x
