#!/usr/bin/env python3
"""Unit tests of localize_repair.py's repair search and scoring (no egca-batch: the routing
is replaced by running the repaired programs' asserts here, on trusted hand-written code)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import localize_repair as lr  # noqa: E402

BUGGY = """def count_big(xs):
    # how many are above 3
    n = 0
    for x in xs:
        if x >= 3:  # was > 3
            n += 1
    return n
"""
TESTS = ["assert count_big([1, 3, 4, 5]) == 2", "assert count_big([3, 3]) == 0", "assert count_big([]) == 0"]


def passes(program):
    ns = {}
    try:
        exec(program, ns)
        for t in TESTS:
            exec(t, ns)
        return True
    except Exception:
        return False


class Repairs(unittest.TestCase):
    def test_candidates_are_one_token_edits_outside_comments(self):
        cands = lr.repairs(BUGGY)
        # line 3: 0 -> 1; line 5: >= -> 5 other operators, 3 -> 4 and 2; line 6: 1 -> 2 and 0.
        by_line = {}
        for line, prog in cands:
            by_line.setdefault(line, []).append(prog)
        self.assertEqual(sorted(by_line), [3, 5, 6])
        self.assertEqual(len(by_line[3]), 1)
        self.assertEqual(len(by_line[5]), 5 + 2)
        self.assertEqual(len(by_line[6]), 2)
        for line, prog in cands:
            old, new = BUGGY.splitlines(), prog.splitlines()
            self.assertEqual(len(old), len(new))
            changed = [i + 1 for i, (a, b) in enumerate(zip(old, new)) if a != b]
            self.assertEqual(changed, [line])
            self.assertIn("# was > 3", new[4])  # the comment is never edited
        self.assertIn("        if x > 3:  # was > 3", [p.splitlines()[4] for p in by_line[5]])

    def test_the_repair_line_is_the_bug_line(self):
        cands = lr.repairs(BUGGY)
        self.assertEqual(lr.repair_lines(cands, [passes(p) for _, p in cands]), [5])

    def test_a_program_that_does_not_tokenize_has_no_repairs(self):
        self.assertEqual(lr.repairs('def f(:\n    return "x\n'), [])


class Score(unittest.TestCase):
    def test_counts_by_hand(self):
        span = lambda a, b: {"line": a, "end_line": b}
        samples = [
            dict(key="a", spans={"earliest": span(5, 5), "last": span(7, 7), "random": span(2, 6)}),
            dict(key="b", spans={"earliest": span(4, 4), "last": None, "random": span(1, 1)}),
            dict(key="c", spans={"earliest": span(1, 1), "last": span(1, 1), "random": span(1, 1)}),
            dict(key="d", spans={}),
        ]
        lines_of = {"a": [5], "b": [5], "c": [2, 3], "d": []}
        s = lr.score(samples, lines_of)
        self.assertEqual((s["sampled"], s["localized"], s["ambiguous"], s["unrepaired"]), (4, 2, 1, 1))
        self.assertEqual(s["hits"], {"earliest": 1, "last": 0, "random": 1})
        self.assertEqual(s["missing"], {"earliest": 0, "last": 1, "random": 0})


if __name__ == "__main__":
    unittest.main()
