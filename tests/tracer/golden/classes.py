class Counter:
    step = 2

    def __init__(self, start):
        self.value = start

    def bump(self):
        self.value += self.step
        return self.value


c = Counter(1)
c.bump()
