def find(xs, t):
    i = 0
    while i < len(xs):
        if xs[i] == t:
            break
        i += 1
    else:
        return -1
    return i
