def nested(a):
    try:
        try:
            a.x()
        except KeyError:
            a.y()
        finally:
            a.z()
    except Exception:
        return 1
    return 0
