key = lambda p: p[1]
def sort_by(xs, f=lambda v: -v):
    return sorted(xs, key=lambda v: (f(v), key((v, v))))
