def check(x):
    if x < 0:
        raise ValueError("negative: " + str(x))
    return x


def run(values):
    out = []
    for v in values:
        out.append(check(v))
    return out


run([2, -1, 3])
