def parse(s):
    try:
        v = int(s)
    except ValueError:
        v = 0
    except (TypeError, KeyError) as e:
        raise RuntimeError() from e
    else:
        v += 1
    return v
