total = 0
for k in range(4):
    total += k * k
print(total)
