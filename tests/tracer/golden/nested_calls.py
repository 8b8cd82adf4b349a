def square(x):
    return x * x


def sum_of_squares(a, b):
    sa = square(a)
    sb = square(b)
    return sa + sb


answer = sum_of_squares(2, 3)
