def scan(xs):
    for x in xs:
        try:
            if x:
                return x
        finally:
            continue
    return None
