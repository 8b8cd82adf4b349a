import sys
n = int(sys.stdin.readline())
total = 0
for i in range(n):
    total += i; total -= 1
if __name__ == "__main__":
    print(total)
