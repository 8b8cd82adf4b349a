def group(f):
    try:
        f()
    except* ValueError:
        pass
    except* TypeError as eg:
        return eg
