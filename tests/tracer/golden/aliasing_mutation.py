def fill(grid, v):
    row = grid[0]
    row.append(v)
    return len(row)


g = [[0], [1]]
n = fill(g, 7)
