def drain(q):
    while q:
        try:
            item = q.pop()
            if item is None:
                break
            if item < 0:
                continue
        finally:
            q.task_done()
    return q
