def running_max(values):
    best = values[0]
    out = []
    for v in values:
        if v > best:
            best = v
        out.append(best)
    return out
