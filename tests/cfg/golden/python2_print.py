def f(x):
    print x
