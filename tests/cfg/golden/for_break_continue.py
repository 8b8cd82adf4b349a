def first_even(xs):
    for x in xs:
        if x < 0:
            continue
        if x % 2 == 0:
            break
    else:
        x = None
    return x
