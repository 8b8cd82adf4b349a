// A program that is cheap to run and expensive to trace: a 1000-element list mutated (so
// rehashed) at every line. f(1000000) takes ~0.1 s untraced and far more than any test
// limit traced to the end; f(n) returns sum(range(n)) for n <= 1000.
#pragma once

namespace egca::testing {

inline constexpr char kHeavyToTrace[] =
    "def f(n):\n"
    "    xs = list(range(1000))\n"
    "    s = 0\n"
    "    for i in range(n):\n"
    "        s += xs[i % 1000]\n"
    "        xs[i % 1000] = i\n"
    "    return s\n";

}  // namespace egca::testing
