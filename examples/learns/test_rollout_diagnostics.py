#!/usr/bin/python3
"""Tests of rollout_diagnostics.py on a hand-made rollout dump with known counts.

    /usr/bin/python3 examples/learns/test_rollout_diagnostics.py
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rollout_diagnostics as D  # noqa: E402


def sample(group, mode, advantage, credit="uniform", span=None, ntok=4, reason="", step=1):
    # Token t covers completion bytes [10 + 3t, 13 + 3t); code starts at byte 10.
    return dict(step=step, group=group, mode=mode, advantage=advantage, credit=credit, reason=reason,
                code_offset=10, spans=dict(earliest=span),
                tokens=[[7, 10 + 3 * t, 13 + 3 * t, 0.0] for t in range(ntok)])


class Diagnostics(unittest.TestCase):
    def make_run(self, tmp):
        run = os.path.join(tmp, "run")
        os.makedirs(os.path.join(run, "rollouts"))
        # Step 1, group 0 (holds a SYNTAX failure): a positive localized LOGIC sample whose span
        # (program bytes 2-5, completion 12-15) covers tokens 0 and 1; a negative one whose span
        # (bytes 6-7) covers token 2 only.
        # Step 1, group 1 (no SYNTAX/CONSTRAINT): a positive localized LOGIC sample, span
        # covering token 3 (bytes 9-12), and a LOGIC sample left uniform (not counted as
        # localized).
        step1 = [
            sample(0, "CORRECT", 0.5),
            sample(0, "LOGIC", 0.25, "localized", dict(begin=2, end=5)),
            sample(0, "SYNTAX", -0.5, "localized", reason="raises NameError at run time"),
            sample(0, "LOGIC", -0.25, "localized", dict(begin=6, end=7), ntok=6),
            sample(1, "LOGIC", 0.1, "localized", dict(begin=9, end=12)),
            sample(1, "LOGIC", -0.1, "uniform"),
        ]
        # Step 2, group 0: a localized LOGIC sample with advantage exactly 0, and a SYNTAX one.
        step2 = [sample(0, "LOGIC", 0.0, "localized", dict(begin=0, end=1), step=2),
                 sample(0, "SYNTAX", 0.0, "localized", reason="does not compile", step=2)]
        with open(os.path.join(run, "rollouts", "step-1.jsonl"), "w") as f:
            for r in step1:
                f.write(json.dumps(r) + "\n")
            f.write("{not json\n")
        with open(os.path.join(run, "rollouts", "step-2.jsonl"), "w") as f:
            for r in step2:
                f.write(json.dumps(r) + "\n")
        return run

    def test_counts_by_hand(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = self.make_run(tmp)
            out = os.path.join(tmp, "d.json")
            err = io.StringIO()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                self.assertEqual(D.main([run, "--out", out]), 0)
            self.assertIn("step-1.jsonl:7: skipped", err.getvalue())
            with open(out) as f:
                res = json.load(f)
            k = res["runs"][run]["counts"]
            self.assertEqual(k["samples"], 8)
            self.assertEqual(k["logic"], 5)
            self.assertEqual(k["localized"], 4)
            self.assertEqual((k["positive"], k["zero"], k["negative"]), (2, 1, 1))
            # Only group 0 of step 1 holds a SYNTAX failure: one of the two positives.
            self.assertEqual(k["positive_mixed_group"], 1)
            # Span tokens of the four localized LOGIC samples: 2 + 1 + 1 + 1 (the step-2 span
            # covers token 0: completion bytes 10-11).
            self.assertEqual(k["span_tokens"], 2 + 1 + 1 + 1)
            self.assertEqual(k["tokens"], 4 + 6 + 4 + 4)
            self.assertAlmostEqual(res["runs"][run]["positive_share"], 2 / 4)
            self.assertEqual(res["pooled"]["modes"], dict(CORRECT=1, LOGIC=5, SYNTAX=2))
            self.assertEqual(res["pooled"]["syntax_reasons"],
                             {"raises NameError at run time": 1, "does not compile": 1})

    def test_bad_input_exits_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(D.main([os.path.join(tmp, "missing")]), 2)
                self.assertIn("not a directory", err.getvalue())
                self.assertEqual(D.main([tmp]), 2)
                self.assertIn("no rollouts", err.getvalue())


if __name__ == "__main__":
    unittest.main()
