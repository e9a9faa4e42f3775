#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds the extension against the installed
# PyTorch, runs the C++ core tests (with the ABI layout check against a real 13.4+ cuda.h)
# and the Python tests. GPU tests run where a GPU and driver are present and skip elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

$PY -m pip install -q torch setuptools wheel pytest hypothesis numpy
$PY -m pip install -q --no-build-isolation --no-deps -e .

if [ ! -f /usr/include/gtest/gtest.h ] || ! command -v cmake >/dev/null; then
  apt-get update -qq && apt-get install -y -qq libgtest-dev cmake >/dev/null
fi

# A real cuda.h of 13.4 or newer, from pip's CUDA runtime wheel, for the layout check.
headers=$(mktemp -d)
trap 'rm -rf "$headers"' EXIT
$PY -m pip download -q --no-deps "nvidia-cuda-runtime>=13.4,<14" -d "$headers"
(cd "$headers" && $PY -m zipfile -e ./*.whl .)
include_13_4=$(dirname "$(find "$headers" -path '*include/cuda.h' | head -n 1)")

cmake -S tests/cpp -B tests/cpp/build -DTGC_CUDA_INCLUDE_13_4="$include_13_4" >/dev/null
cmake --build tests/cpp/build -j2
ctest --test-dir tests/cpp/build --output-on-failure

$PY -m pytest tests -q -rs -p no:cacheprovider
