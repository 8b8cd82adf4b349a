def pairs(n):
    out = []
    for i in range(n):
        for j in range(i):
            out.append((i, j))
        out.append(i)
    return out
