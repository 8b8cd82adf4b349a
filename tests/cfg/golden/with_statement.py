def copy(src, dst):
    with open(src) as a, open(dst, "w") as b:
        for line in a:
            b.write(line)
    return dst
