s = input()
out = ""
for ch in s:
    if ch.isalpha():
        out = ch + out
print(out)
