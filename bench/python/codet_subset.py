"""The CodeT sample subset the Python-vs-egca-batch checks share (equality and bench):
`n` of the 16,400 CodeT HumanEval samples, evenly spaced (sample i * 16400 // n), written
as an egca sample JSONL so that egca-batch and egca.route_batch read the same records."""
from __future__ import annotations

import json
import os
import pathlib

import egca

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(os.environ.get("EGCA_DATA_DIR", ROOT.parent / "shared" / "data"))
HUMANEVAL = DATA / "humaneval" / "HumanEval.jsonl.gz"
CODET = DATA / "samples" / "codet" / "HumanEval_codegen16B_temp0.8_topp0.95_num100.jsonl.gz"
BUILD = pathlib.Path(os.environ.get("EGCA_BINARY_DIR", ROOT / "build"))
EGCA_BATCH = BUILD / "tools" / "egca-batch" / "egca-batch"


def write_subset(path: str | os.PathLike, n: int = 500) -> tuple[egca.ProblemSet, list]:
    """Writes the subset to `path`; returns (problems, samples as egca.load_samples reads
    them back)."""
    problems = egca.load_problems(HUMANEVAL)
    samples, bad = egca.convert_samples(CODET, "codet", problems)
    if bad:
        raise RuntimeError(f"{CODET}: {len(bad)} bad records, first: {bad[0]}")
    picked = [samples[i * len(samples) // n] for i in range(n)]
    with open(path, "w") as f:
        for s in picked:
            f.write(json.dumps({"problem_id": s.problem_id, "completion": s.completion,
                                "completion_is_body": True, "model": s.model}) + "\n")
    back = egca.load_samples(path)
    if len(back) != n or back.bad_records:
        raise RuntimeError(f"{path}: read back {len(back)} samples, {len(back.bad_records)} bad")
    return problems, back


def read_store(store: str | os.PathLike) -> dict:
    """egca-batch's records by (problem, key, dup), without the store framing."""
    out = {}
    with open(os.path.join(store, "results.jsonl")) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") == "sample":
                out[(rec["problem"], rec["key"], rec["dup"])] = rec
    return out


TIMING = ("grade_seconds", "localize_seconds", "shared_result", "crc", "type", "origin")


def comparable(record: dict) -> dict:
    """A record without what may differ between equal results (timing, framing, origin)."""
    return {k: v for k, v in record.items() if k not in TIMING}
