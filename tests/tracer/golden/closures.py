def make_adder(base):
    calls = 0

    def add(x):
        nonlocal calls
        calls += 1
        return base + x + calls

    return add


plus10 = make_adder(10)
a = plus10(1)
b = plus10(1)
