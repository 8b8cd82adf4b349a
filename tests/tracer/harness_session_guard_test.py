#!/usr/bin/python3
"""A reused test process empties its directory between tests only when that directory is the
sandbox's private one (TMPDIR, set by the fork server): the harness imported anywhere else
never deletes the files of the directory it runs in.

    harness_session_guard_test.py TRACER_SRC_DIR      (ctest tracer_harness_session_guard)
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, sys.argv[1])
import harness  # noqa: E402


def main():
    base = tempfile.mkdtemp(prefix="egca-guard-")
    try:
        d = os.path.join(base, "work")
        os.mkdir(d)
        open(os.path.join(d, "keep.txt"), "w").write("x")
        os.chdir(d)
        os.environ.pop("TMPDIR", None)
        harness.session_begin()
        harness.session_reset()
        assert os.listdir(d) == ["keep.txt"], os.listdir(d)
        os.environ["TMPDIR"] = base  # another directory: still not emptied
        harness.session_begin()
        assert os.listdir(d) == ["keep.txt"], os.listdir(d)
        os.environ["TMPDIR"] = d  # the private directory: emptied, as in the sandbox
        harness.session_begin()
        assert os.listdir(d) == [], os.listdir(d)
        open(os.path.join(d, "again.txt"), "w").write("x")
        harness.session_reset()
        assert os.listdir(d) == [], os.listdir(d)
        print("harness session guard: OK")
    finally:
        os.chdir("/")
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
