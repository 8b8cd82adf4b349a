#!/usr/bin/env bash
# Runs the test suite. With CI=true, tests labelled `slow` are skipped (each has a
# benchmark in bench/ that covers it). Extra arguments go to ctest (e.g. -L golden).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build -j "${EGCA_JOBS:-2}"
args=(--test-dir build --output-on-failure -j "${EGCA_JOBS:-2}" --no-tests=error)
if [ "${CI:-}" = "true" ]; then args+=(-LE slow); fi
ctest "${args[@]}" "$@"
