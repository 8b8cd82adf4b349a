#!/usr/bin/env python3
"""Unit tests of syntax_cause.py's slips and scoring (no egca-batch: records are hand-made)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import syntax_cause as sc  # noqa: E402

PROGRAM = """def count_items(seq):
    cnt = 0
    for elem in seq:
        if elem > 1:
            cnt += 1
    return cnt"""


def span(first, last):
    # the store's form: [begin_byte, end_byte, begin_line, begin_col, end_line, end_col]
    return {"program": [0, 1, first, 0, last, 1], "completion": None}


class Slips(unittest.TestCase):
    def test_every_pooled_occurrence_gets_the_pools_other_spellings(self):
        out = sc.slips(PROGRAM)
        # seq (2 occurrences) x 5 other spellings of xs, elem (2) x 5 of x, cnt (3) x 3 of n
        self.assertEqual(len(out), 2 * 5 + 2 * 5 + 3 * 3)
        self.assertIn((3, 16, "seq", "xs"), out)
        self.assertNotIn("count_items", {s[2] for s in out})  # not a pooled name
        slipped = sc.apply(PROGRAM, (6, 11, "cnt", "hits"))
        self.assertEqual(slipped.split("\n")[5], "    return hits")
        self.assertEqual(slipped.split("\n")[:5], PROGRAM.split("\n")[:5])

    def test_a_spelling_already_in_the_program_is_not_used(self):
        out = sc.slips("def f(xs):\n    n = count = 0\n    return n")
        self.assertEqual({new for _, _, old, new in out if old == "count"}, {"cnt", "hits"})


class Score(unittest.TestCase):
    def test_hits_sizes_and_places(self):
        records = [
            # slip on the raising line 6: both spans cover it
            {"mode": "SYNTAX", "error_type": "NameError", "error": span(6, 6), "cause": span(1, 6)},
            # slip on the binding (line 2), raised at line 5: only the cause covers it
            {"mode": "SYNTAX", "error_type": "UnboundLocalError", "error": span(5, 5), "cause": span(2, 5)},
            # an older store: kind from the message, no cause span
            {"mode": "SYNTAX", "error_message": "NameError: name 'x' is not defined", "error": span(4, 4)},
            {"mode": "LOGIC"},  # the slip did not raise: not scored
            None,               # not routed
        ]
        out = sc.score(records, [6, 2, 3, 4, 1])
        self.assertEqual(out["name_errors"], 3)
        self.assertEqual(out["modes"], {"SYNTAX": 3, "LOGIC": 1})
        self.assertEqual(out["spans"]["error"]["hits"], 1)
        self.assertEqual(out["spans"]["cause"]["hits"], 2)
        self.assertEqual(out["spans"]["cause"]["missing"], 1)
        self.assertAlmostEqual(out["spans"]["error"]["mean_lines"], 1.0)
        self.assertAlmostEqual(out["spans"]["cause"]["mean_lines"], (6 + 4) / 3)
        self.assertEqual(out["by_place"]["the raising statement"], dict(n=1, error=1, cause=1))
        self.assertEqual(out["by_place"]["before the raising statement"], dict(n=2, error=0, cause=1))


if __name__ == "__main__":
    unittest.main()
