def first_negative(xs):
    for idx, x in enumerate(xs):
        if x < 0:
            return idx
    return None


pos = first_negative([3, -2, -5])
