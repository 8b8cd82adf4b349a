async def consume(stream, lock):
    total = 0
    async with lock:
        async for chunk in stream:
            total += await chunk.size()
    return total
