def longest_increasing_subsequence(nums):
    if not nums:
        return 0

    n = len(nums)
    dp = [1] * n

    for i in range(1, n):
        for j in range(i):
            if nums[i] > nums[j]: # CORRECT
                dp[i] = max(dp[i], dp[j] + 1)

    return max(dp)

