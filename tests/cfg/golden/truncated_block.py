def f(xs):
    for x in xs:
