def read(path):
    h = open(path)
    try:
        if not h:
            return None
        data = h.read()
    except OSError:
        data = ""
    finally:
        h.close()
    return data
