#!/usr/bin/env python3
"""Unit test of localize_real.py's scoring rules (hand-made inputs; no egca binary)."""
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import localize_real as L  # noqa: E402


def span(first, last, end_col=5):
    # egca-batch's span: [begin_byte, end_byte, begin line, begin column, end line, end column]
    return {"program": [0, 0, first, 4, last, end_col], "completion": None}


class Scoring(unittest.TestCase):
    def test_changed_lines_ignore_blank_lines(self):
        bad = "def f(x):\n    y = x + 1\n\n    return y\n"
        good = "def f(x):\n    y = x + 2\n    \n    return y\n"
        self.assertEqual(L.changed_lines(bad, good), ([2], 1))
        # A pure insertion names no line of the failing program.
        self.assertEqual(L.changed_lines("a\nb\n", "a\nc\nb\n"), ([], 1))

    def test_covers_and_the_column_zero_end(self):
        self.assertTrue(L.covers(span(3, 4), [4]))
        self.assertFalse(L.covers(span(3, 4, end_col=0), [4]))  # ends at the start of line 4
        self.assertFalse(L.covers(None, [1]))

    def test_miss_classes(self):
        self.assertEqual(L.miss_class(span(7, 7), [7], True), "hit")
        self.assertEqual(L.miss_class(span(9, 9), [7], False), "off_by_1_2")
        self.assertEqual(L.miss_class(span(3, 3), [7], False), "early")
        self.assertEqual(L.miss_class(span(12, 12), [7], False), "late")
        self.assertEqual(L.miss_class(None, [7], False), "none")

    def test_repairs_are_one_token(self):
        got = L.repairs("if x < 3:\n    y = 0  # < 1\n")
        lines = sorted({line for line, _ in got})
        self.assertEqual(lines, [1, 2])
        self.assertIn((1, "if x <= 3:\n    y = 0  # < 1\n"), got)
        self.assertIn((2, "if x < 3:\n    y = 1  # < 1\n"), got)
        self.assertFalse(any("# <=" in p for _, p in got))  # comments untouched

    def test_interval_brackets_the_mean(self):
        lo, hi = L.interval([1] * 30 + [0] * 10, random.Random(0))
        self.assertLess(lo, 0.75)
        self.assertGreater(hi, 0.75)
        self.assertEqual(L.interval([], random.Random(0)), None)


if __name__ == "__main__":
    unittest.main()
