#!/usr/bin/env bash
# Builds and installs the C++ package, then builds examples/cpp against it and LibTorch, and
# (unless --no-run) runs the example. Build trees under ${BUILD:-build-cpp}.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
build=${BUILD:-$PWD/build-cpp}
jobs=${MAX_JOBS:-$(nproc)}
cmake -S . -B "$build/core" >/dev/null
cmake --build "$build/core" -j "$jobs"
cmake --install "$build/core" --prefix "$build/prefix" >/dev/null
torch_prefix=$($PY -c 'import torch; print(torch.utils.cmake_prefix_path)')
cmake -S examples/cpp -B "$build/example" -DCMAKE_PREFIX_PATH="$build/prefix;$torch_prefix" >/dev/null
cmake --build "$build/example" -j "$jobs"
if [ "${1:-}" != "--no-run" ]; then
  "$build/example/green_partitions"
fi
