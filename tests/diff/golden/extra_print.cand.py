def fizz(n):
    out = []
    print("start", n)
    for i in range(1, n + 1):
        print("at", i)
        if i % 3 == 0:
            out.append("Fizz")
        else:
            out.append(str(i + 1))
    return out
