def running_max(values):
    top = values[0]
    result = []
    for x in values:
        if x >= top + 1:
            top = x
        result.append(top)
    return result
