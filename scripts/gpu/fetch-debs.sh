#!/bin/bash
# Downloads (here, on the Debian machine) the Debian packages scripts/gpu/bench.sh unpacks on a
# GPU machine that has no package registry: ~22 MB into .gpudeps/ (ignore it in git:
# `echo /.gpudeps/ >> .git/info/exclude`), carried to the device with the working tree.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpudeps
cd .gpudeps
apt-get download libfmt-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libpcre2-8-0 \
  libicu-dev libicu72 zlib1g-dev zlib1g
ls -la
