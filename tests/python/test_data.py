"""Problems and samples from Python: every loader egca-batch has, and bad input."""
import gzip
import json

import pytest

import egca
from conftest import DATA_DIR, HUMANEVAL


def test_humaneval_problems(humaneval):
    assert len(humaneval) == 164
    p = humaneval["HumanEval/0"]
    assert p.id == "HumanEval/0" and p.entry_point == "has_close_elements"
    assert p.tests[0]["kind"] == "assert" and "def check" in p.tests[0]["test_code"]
    assert p.references[0].startswith(p.prompt)
    assert humaneval[0].id == "HumanEval/0" and humaneval[-1].id == "HumanEval/163"
    assert "HumanEval/3" in humaneval and "HumanEval/999" not in humaneval
    assert humaneval.ids()[:2] == ["HumanEval/0", "HumanEval/1"]


@pytest.mark.parametrize("path,fmt,first", [
    ("mbpp/mbpp.jsonl", "mbpp", "mbpp/1"),
    ("mbpp/sanitized-mbpp.json", "mbpp_sanitized", "mbpp/2"),
    ("mbpp/MBPP_ET.jsonl.gz", "mbpp_et", None),
    ("apps/mapcoder_selected150.jsonl", "mapcoder_apps", None),
    ("apps/coderl_train", "apps_dir", None),
    ("cpp/humaneval_cpp.jsonl.gz", "humaneval_cpp", "CPP/0"),
    ("cpp/mbcpp_release_v1.2.jsonl.gz", "mbxp_cpp", "MBCPP/1"),
    ("cpp/mdeval_bug_CPP.jsonl", "mdeval_cpp", None),
])
def test_every_loader(path, fmt, first):
    full = DATA_DIR / path
    if not full.exists():
        pytest.skip(f"{full} not present")
    ps = egca.load_problems(full, format=fmt, limit=5)
    assert 0 < len(ps) <= 5
    assert all(len(p.tests) > 0 for p in (ps[i] for i in range(len(ps))))
    if first:
        assert ps[0].id == first
    auto = egca.load_problems(full, limit=5)  # format detection agrees
    assert auto.ids() == ps.ids()


def test_loader_errors(tmp_path, humaneval):
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        egca.load_problems(tmp_path / "nope.jsonl")
    with pytest.raises(ValueError, match="format"):
        egca.load_problems(HUMANEVAL, format="humaneval2")
    with pytest.raises(ValueError, match="mapcoder_call_tests"):
        egca.load_problems(HUMANEVAL, mapcoder_call_tests="both")
    with pytest.raises(TypeError):
        egca.load_problems(42)
    weird = tmp_path / "weird.jsonl"
    weird.write_text('{"hello": 1}\n')
    with pytest.raises(ValueError, match="weird.jsonl"):
        egca.load_problems(weird)
    with pytest.raises(KeyError, match=r'did you mean "HumanEval/1"'):
        humaneval["humaneval/1x"]
    with pytest.raises(KeyError, match="unknown problem id"):
        humaneval["no such problem at all"]
    with pytest.raises(IndexError):
        humaneval[1000]
    with pytest.raises(TypeError, match="problem key"):
        humaneval[1.5]


def test_bad_records_are_reported(tmp_path):
    f = tmp_path / "he.jsonl"
    good = {"task_id": "X/0", "prompt": "def f():\n", "entry_point": "f",
            "canonical_solution": "    return 1\n", "test": "def check(c):\n    assert c() == 1\n"}
    f.write_text(json.dumps(good) + "\n{not json\n")
    ps = egca.load_problems(f, format="humaneval")
    assert len(ps) == 1 and len(ps.bad_records) == 1 and "he.jsonl:2" in ps.bad_records[0]


def test_samples(tmp_path, humaneval):
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps({"problem_id": "HumanEval/0", "completion": "    return True\n",
                             "completion_is_body": True}) + "\nbroken\n")
    samples = egca.load_samples(f)
    assert len(samples) == 1 and samples[0].completion_is_body
    assert len(samples.bad_records) == 1
    with pytest.raises(FileNotFoundError):
        egca.load_samples(tmp_path / "missing.jsonl")
    codet = DATA_DIR / "samples" / "codet" / "HumanEval_codegen16B_temp0.8_topp0.95_num100.jsonl.gz"
    if codet.exists():
        converted, bad = egca.convert_samples(codet, "codet", humaneval)
        assert len(converted) == 16400 and not bad
        assert converted[0].problem_id == "HumanEval/0" and converted[0].completion_is_body
    with pytest.raises(ValueError, match="source"):
        egca.convert_samples(f, "nosuchsource", humaneval)


def test_sample_objects():
    s = egca.Sample("HumanEval/0", "    return 1\n", True, model="m")
    assert s.completion_is_body and not s.detect_body and s.model == "m"
    s = egca.Sample("HumanEval/0", b"    return 1\n")
    assert s.detect_body
    with pytest.raises(ValueError, match="not valid UTF-8 \\(byte 1\\)"):
        egca.Sample("HumanEval/0", b"x\xff")
    with pytest.raises(ValueError, match="lone surrogate"):
        egca.Sample("HumanEval/0", "x\udcff")
    with pytest.raises(TypeError, match="must be str or bytes"):
        egca.Sample("HumanEval/0", 3)
    assert "humaneval" in egca.dataset_formats() and "codet" in egca.sample_sources()
