class Stack(list):
    """A stack."""
    limit = 10

    def push(self, x):
        if len(self) >= self.limit:
            raise OverflowError
        self.append(x)

    class Empty(Exception):
        pass
