def safe(f):
    try:
        return f()
    except:
        log = 1
        raise
