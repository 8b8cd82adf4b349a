def run(f):
    f.open()
    try:
        f.work()
    finally:
        f.close()
    return f
