def check(x):
    assert x is not None, "x"
    if x < 0:
        raise ValueError("negative")
    return x
