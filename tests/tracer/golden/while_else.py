def find(items, target):
    i = 0
    while i < len(items):
        if items[i] == target:
            break
        i += 1
    else:
        return -1
    return i


hit = find([4, 5], 5)
miss = find([4], 9)
