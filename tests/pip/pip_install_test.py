#!/usr/bin/env python3
"""`pip install .` end to end, offline: a fresh venv, pip-installs this checkout with the
in-tree backend (tools/python/build_backend), imports egca from outside the source tree and
routes the EGCA case study (examples/cli/lis_*.py); builds a wheel and checks its contents;
checks that a package built for another Python refuses to import with a clear ImportError.

    pip_install_test.py --python /usr/bin/python3 [--reuse-build BUILD_DIR]

--reuse-build: EGCA_PIP_BUILD_DIR=BUILD_DIR (the configured tree ctest runs from: only the
package's targets are brought up to date). Without it the backend's default runs: a
from-scratch CMake build in <source>/build-pip (slow on 2 cores; label slow).
Exit 0: passed; 1: failed (the reason on stderr).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
# What the wheel must hold besides the dist-info (the extension's name depends on the Python).
WHEEL_FILES = {"egca/__init__.py", "egca/client.py", "egca/trl.py", "egca/verl.py",
               "egca/_serve.py", "egca/_build_info.py", "egca/egca-py-server", "egca/egca-serve"}

CASE_STUDY = r"""
import json, os, sys
import egca
assert os.path.realpath(egca.__file__).startswith(os.path.realpath(sys.prefix)), egca.__file__
X = sys.argv[1]
cand = open(os.path.join(X, "lis_cand.py")).read()
ref = open(os.path.join(X, "lis_ref.py")).read()
out = egca.trace(cand, ref, fn="longest_increasing_subsequence", inputs=["[[1, 3, 3, 5]]"])
assert out["mode"] == "LOGIC", out["mode"]
span = out["earliest_divergence"]
line = cand.encode()[span["begin_byte"]:span["end_byte"]].decode()
print(json.dumps({"mode": out["mode"], "span": line, "file": egca.__file__}))
assert "nums[i] >= nums[j]" in line, line   # the case study's bug: `>=` where `>` is right
"""

MISMATCH = r"""
import sys
sys.path.insert(0, sys.argv[1])
try:
    import egca
except ImportError as e:
    print(e)
    assert "built for CPython 3.99" in str(e), e
    sys.exit(0)
sys.exit("imported a package built for another Python")
"""


def run(cmd, **kw):
    print("+", " ".join(map(str, cmd)), flush=True)
    r = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-6000:] + r.stderr[-6000:])
        raise SystemExit(f"FAILED ({r.returncode}): {' '.join(map(str, cmd))}")
    return r


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--reuse-build", default="")
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EGCA_SERVER_DIR")}
    env["PIP_NO_INDEX"] = "1"  # offline: nothing from any index
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    if args.reuse_build:
        env["EGCA_PIP_BUILD_DIR"] = args.reuse_build
    else:
        env.pop("EGCA_PIP_BUILD_DIR", None)
    with tempfile.TemporaryDirectory(prefix="egca-pip-") as tmp:
        venv = pathlib.Path(tmp) / "v"
        run([args.python, "-m", "venv", str(venv)], env=env)
        py, pip = venv / "bin" / "python", venv / "bin" / "pip"
        run([pip, "install", "--no-build-isolation", "--no-index", str(ROOT)], env=env, cwd=tmp)
        # import egca from outside the source tree, route the EGCA case study
        r = run([py, "-c", CASE_STUDY, str(ROOT / "examples" / "cli")], env=env, cwd=tmp)
        print(r.stdout.strip())
        run([venv / "bin" / "egca-serve", "--help"], env=env, cwd=tmp)
        # a wheel (reusing the tree the install just built)
        wheels = pathlib.Path(tmp) / "wheels"
        wenv = dict(env)
        if not args.reuse_build:
            wenv["EGCA_PIP_BUILD_DIR"] = str(ROOT / "build-pip")
        run([pip, "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", str(wheels),
             str(ROOT)], env=wenv, cwd=tmp)
        (wheel,) = wheels.glob("egca-*.whl")
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
            modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in z.infolist()}
        print(f"{wheel.name}:")
        for n in names:
            print(f"  {n}")
        missing = WHEEL_FILES - set(names)
        if missing:
            raise SystemExit(f"FAILED: the wheel lacks {sorted(missing)}")
        if not any(n.startswith("egca/_egca.cpython-") and n.endswith(".so") for n in names):
            raise SystemExit("FAILED: no egca/_egca.cpython-*.so in the wheel")
        for prog in ("egca/egca-py-server", "egca/egca-serve"):
            if modes[prog] & 0o111 == 0:
                raise SystemExit(f"FAILED: {prog} is not executable in the wheel")
        # a package built for another Python: a clear ImportError
        site = pathlib.Path(run([py, "-c", "import egca, os; print(os.path.dirname("
                                 "os.path.dirname(egca.__file__)))"], env=env, cwd=tmp)
                            .stdout.strip())
        fake = pathlib.Path(tmp) / "fake"
        shutil.copytree(site / "egca", fake / "egca")
        info = fake / "egca" / "_build_info.py"
        info.write_text(info.read_text().replace("PYTHON = (3, 11)", "PYTHON = (3, 99)"))
        print(run([py, "-c", MISMATCH, str(fake)], env=env, cwd=tmp).stdout.strip())
    print("pip install test: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
