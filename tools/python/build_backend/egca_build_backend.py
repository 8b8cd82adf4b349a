"""egca's PEP 517 build backend: `pip install .` / `pip wheel .` drive the project's own
CMake build (no second build description) and pack what it builds into a wheel.

    python3 -m venv v && v/bin/pip install --no-build-isolation .     # offline
    v/bin/pip wheel --no-build-isolation --no-deps . -w dist

What happens (build_wheel):
 1. The Python running pip must be CPython 3.11 (the interpreter egca's tracer embeds and
    the extension is built for); any other stops the build with one clear line.
 2. CMake configures a build tree for that interpreter (-DEGCA_PYTHON_EXECUTABLE=it) without
    tests, benchmarks or the LibTorch trainer, and builds the targets the package needs:
    the extension egca._egca, the executor's server program egca-py-server, and egca-serve.
    Default tree: <source>/build-pip, emptied first (a from-scratch build; ccache makes it
    cheap when the main build/ exists). EGCA_PIP_BUILD_DIR=<dir> reuses a configured tree
    instead (only its targets are rebuilt; it must have been configured for the same
    interpreter version). EGCA_JOBS: parallel jobs (default 2).
 3. The wheel holds egca/ (the .py files, _egca.*.so, egca-py-server and egca-serve next to
    it: the executors find their server next to the loaded library, dladdr), a
    _build_info.py the package checks at import, and an `egca-serve` console script.

The wheel links Debian 12's shared libraries (libpython3.11, tree-sitter, protobuf,
libclang-cpp, ...): it installs on machines with the packages scripts/setup.sh installs.
"""
from __future__ import annotations

import base64
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile

NAME = "egca"
SOURCE = pathlib.Path.cwd()
# The targets the package is made of, and the programs placed next to the extension.
TARGETS = ["egca_python", "egca-py-server", "egca-serve"]
PROGRAMS = {"egca-py-server": "tracer/egca-py-server", "egca-serve": "tools/egca-serve/egca-serve"}
SUPPORTED = (3, 11)


def _fail(message: str):
    raise SystemExit(f"egca build: {message}")


def _version() -> str:
    text = (SOURCE / "CMakeLists.txt").read_text()
    m = re.search(r"project\(egca VERSION ([0-9.]+)", text)
    if not m:
        _fail("CMakeLists.txt: no `project(egca VERSION x.y.z ...)` line")
    return m.group(1)


def _tag() -> str:
    if sys.implementation.name != "cpython":
        _fail(f"egca needs CPython, this pip runs {sys.implementation.name}")
    py = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{py}-{py}-{plat}"


def _check_python():
    if sys.version_info[:2] != SUPPORTED:
        _fail(f"egca's tracer embeds CPython {SUPPORTED[0]}.{SUPPORTED[1]} (Debian 12's "
              f"libpython3.11) and the extension must match it; this pip runs Python "
              f"{sys.version_info[0]}.{sys.version_info[1]} ({sys.executable}). Use "
              f"/usr/bin/python3 -m venv ... (or its pip).")


def _run(cmd: list[str], **kw):
    print("egca build:", " ".join(cmd), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, cwd=SOURCE, **kw)
    if r.returncode != 0:
        _fail(f"`{' '.join(cmd)}` failed (exit {r.returncode})")


def _cache_value(build: pathlib.Path, key: str) -> str | None:
    cache = build / "CMakeCache.txt"
    if not cache.exists():
        return None
    for line in cache.read_text(errors="replace").splitlines():
        if line.startswith(key + ":"):
            return line.split("=", 1)[1]
    return None


def _build() -> pathlib.Path:
    """Configures (or reuses) the build tree and builds the package's targets."""
    _check_python()
    jobs = os.environ.get("EGCA_JOBS", "2")
    reuse = os.environ.get("EGCA_PIP_BUILD_DIR")
    if reuse:
        build = pathlib.Path(reuse)
        if not build.is_absolute():
            build = SOURCE / build
        exe = _cache_value(build, "EGCA_PYTHON_EXECUTABLE")
        if exe is None:
            _fail(f"EGCA_PIP_BUILD_DIR={reuse}: not a configured egca build tree "
                  f"(no CMakeCache.txt with EGCA_PYTHON_EXECUTABLE)")
        out = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True)
        mine = "%d.%d" % sys.version_info[:2]
        if out.returncode != 0 or out.stdout.strip() != mine:
            _fail(f"EGCA_PIP_BUILD_DIR={reuse} is configured for {exe} "
                  f"({out.stdout.strip() or 'not runnable'}), this pip runs Python {mine}")
    else:
        build = SOURCE / "build-pip"
        if build.exists():
            shutil.rmtree(build)
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        _run(["cmake", "-S", str(SOURCE), "-B", str(build), *generator,
              "-DCMAKE_BUILD_TYPE=RelWithDebInfo", f"-DEGCA_PYTHON_EXECUTABLE={sys.executable}",
              "-DEGCA_BUILD_TESTS=OFF", "-DEGCA_BUILD_BENCH=OFF", "-DEGCA_BUILD_TRAINER=OFF"])
    _run(["cmake", "--build", str(build), "-j", jobs, "--target", *TARGETS])
    return build


def _package_files(build: pathlib.Path) -> dict[str, tuple[pathlib.Path | bytes, int]]:
    """Wheel path -> (file or contents, mode)."""
    pkg = build / "python" / NAME
    ext = sorted(pkg.glob("_egca*.so"))
    if len(ext) != 1:
        _fail(f"{pkg}: expected one _egca*.so, found {[e.name for e in ext]}")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not ext[0].name.endswith(suffix):
        _fail(f"{ext[0].name} is not built for this Python (its suffix is {suffix})")
    files: dict[str, tuple[pathlib.Path | bytes, int]] = {}
    for py in sorted((SOURCE / "tools" / "python" / NAME).glob("*.py")):
        files[f"{NAME}/{py.name}"] = (py, 0o644)
    files[f"{NAME}/{ext[0].name}"] = (ext[0], 0o755)
    for name, rel in PROGRAMS.items():
        path = build / rel
        if not path.exists():
            _fail(f"{path} was not built")
        files[f"{NAME}/{name}"] = (path, 0o755)
    info = (f'"""Written by the build (tools/python/build_backend): what this egca was built '
            f'for."""\nPYTHON = {tuple(sys.version_info[:2])!r}\nEXT_SUFFIX = {suffix!r}\n'
            f'VERSION = {_version()!r}\n')
    files[f"{NAME}/_build_info.py"] = (info.encode(), 0o644)
    return files


def _metadata() -> str:
    readme = "egca: execution tracing, reference divergence and token credit for RL on code."
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\n"
            f"Summary: {readme}\nRequires-Python: =={SUPPORTED[0]}.{SUPPORTED[1]}.*\n"
            "Provides-Extra: numpy\nRequires-Dist: numpy; extra == \"numpy\"\n")


def _dist_info_files() -> dict[str, bytes]:
    d = f"{NAME}-{_version()}.dist-info"
    return {
        f"{d}/METADATA": _metadata().encode(),
        f"{d}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: egca_build_backend\nRoot-Is-Purelib: "
                       f"false\nTag: {_tag()}\n").encode(),
        f"{d}/entry_points.txt": b"[console_scripts]\negca-serve = egca._serve:main\n",
        f"{d}/top_level.txt": f"{NAME}\n".encode(),
    }


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory: str, files: dict) -> str:
    name = f"{NAME}-{_version()}-{_tag()}.whl"
    dist = f"{NAME}-{_version()}.dist-info"
    path = pathlib.Path(wheel_directory) / name
    record = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        def add(arcname: str, data: bytes, mode: int):
            zi = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
            record.append(_record_line(arcname, data))
        for arcname, (src, mode) in files.items():
            add(arcname, src if isinstance(src, bytes) else src.read_bytes(), mode)
        for arcname, data in _dist_info_files().items():
            add(arcname, data, 0o644)
        record.append(f"{dist}/RECORD,,")
        zi = zipfile.ZipInfo(f"{dist}/RECORD", date_time=(2020, 1, 1, 0, 0, 0))
        zi.external_attr = 0o100644 << 16
        z.writestr(zi, "\n".join(record) + "\n")
    return name


# ---------------------------------------------------------------- PEP 517 hooks

def get_requires_for_build_wheel(config_settings=None):
    return []  # cmake, ninja, pybind11 are Debian packages (scripts/setup.sh), not PyPI's


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = pathlib.Path(metadata_directory) / f"{NAME}-{_version()}.dist-info"
    d.mkdir(parents=True, exist_ok=True)
    for arcname, data in _dist_info_files().items():
        (d.parent / arcname).write_bytes(data)
    return d.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build = _build()
    return _write_wheel(wheel_directory, _package_files(build))


def build_sdist(sdist_directory, config_settings=None):
    _fail("no sdist: build a wheel from the checkout (`pip wheel --no-build-isolation .`); "
          "the source needs third_party/npm/node_modules from scripts/setup.sh")
