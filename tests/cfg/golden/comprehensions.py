def build(xs, ys):
    squares = [x * x for x in xs if x > 0]
    table = {x: y for x in xs for y in ys if x != y if y}
    unique = {abs(x) for x in xs}
    total = sum(x for x in xs)
    return squares, table, unique, total
