def describe(p):
    match p:
        case (0, 0):
            r = "origin"
        case (x, 0) if x > 0:
            r = "x-axis"
        case _:
            r = "other"
    return r
