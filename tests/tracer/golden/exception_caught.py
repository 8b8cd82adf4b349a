def safe_div(a, b):
    try:
        q = a // b
    except ZeroDivisionError as e:
        q = None
    return q


r1 = safe_div(7, 2)
r2 = safe_div(1, 0)
