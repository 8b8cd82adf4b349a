log = []


def work(fail):
    try:
        log.append("start")
        if fail:
            raise KeyError("k")
        return "ok"
    finally:
        log.append("cleanup")


ok = work(False)
try:
    work(True)
except KeyError:
    handled = True
