#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds the extension against the installed
# PyTorch, runs the C++ core tests (with the ABI layout check against a real 13.4+ cuda.h)
# and the Python tests. GPU tests run where a GPU and driver are present and skip elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# The oldest torch release supported (torch_green_contexts/_torch_version.py's MINIMUM_TORCH, at
# its latest patch); its part runs last, in a virtual environment (TGC_SKIP_OLDEST=1 skips it).
OLDEST_TORCH=2.6.0
began=$(date +%s)
part=$began
took() {  # prints how long the part just ended took
  local now; now=$(date +%s)
  echo "== $1: $((now - part)) s (total $((now - began)) s)"
  part=$now
}

$PY -m pip install -q torch setuptools wheel pytest hypothesis numpy gcovr matplotlib mypy
$PY -m pip install -q --no-build-isolation --no-deps -e .
took "install and build against $($PY -c 'import torch; print("torch", torch.__version__)')"

if [ ! -f /usr/include/gtest/gtest.h ] || ! command -v cmake >/dev/null; then
  apt-get update -qq && apt-get install -y -qq libgtest-dev cmake >/dev/null
fi

# A real cuda.h of 13.4 or newer, from pip's CUDA runtime wheel, for the layout check.
headers=$(mktemp -d)
trap 'rm -rf "$headers"' EXIT
$PY -m pip download -q --no-deps "nvidia-cuda-runtime>=13.4,<14" -d "$headers"
(cd "$headers" && $PY -m zipfile -e ./*.whl .)
include_13_4=$(dirname "$(find "$headers" -path '*include/cuda.h' | head -n 1)")

# C++ tests of the core: rules, ABI layout, and the simulated driver for every driver version
# (12.4, 12.5, 13.0, 13.1, 13.4), built with line coverage of the driver-facing core.
build=tests/cpp/build
find "$build" -name '*.gcda' -delete 2>/dev/null || true
cmake -S tests/cpp -B "$build" -DTGC_COVERAGE=ON -DTGC_CUDA_INCLUDE_13_4="$include_13_4" >/dev/null
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure
took "C++ tests (ctest)"
for version in 12040 12050 13000 13010 13040; do
  printf 'simulated driver %s: ' "$version"
  TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY="$PWD/$build/libtgc_simdriver.so" TGC_SIM_DRIVER_VERSION=$version \
    "$build/sim_tests" --gtest_brief=1 | grep -E '^\[  (PASSED|FAILED) ' | tr '\n' ' '
  echo
done
took "the core against the simulated driver, per version"
# The concurrency tests again under ThreadSanitizer (core and simulated driver instrumented).
tsan=tests/cpp/build-tsan
cmake -S tests/cpp -B "$tsan" -DCMAKE_CXX_FLAGS="-fsanitize=thread -O1 -g" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build "$tsan" -j2 --target concurrency_tests tgc_simdriver
for version in 12040 13000 13040; do
  printf 'ThreadSanitizer, simulated driver %s: ' "$version"
  TSAN_OPTIONS="halt_on_error=1 exitcode=66" TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY="$PWD/$tsan/libtgc_simdriver.so" \
    TGC_SIM_DRIVER_VERSION=$version "$tsan/concurrency_tests" --gtest_brief=1 | grep -E '^\[  (PASSED|FAILED) ' | tr '\n' ' '
  echo
done
took "ThreadSanitizer"
echo "Line coverage of the driver-facing core (csrc/core), C++ tests with the simulated driver:"
$PY -m gcovr --root . --filter 'csrc/core/' --gcov-ignore-parse-errors=negative_hits.warn_once_per_file "$build"

echo "The C++ package and the LibTorch example (examples/cpp) build against the installed torch:"
bash scripts/build_cpp_example.sh --no-run

took "coverage, C++ package and example"
echo "mypy --strict on the public package:"
$PY -m mypy --strict torch_green_contexts

# Python tests; TGC_TEST_WHEEL=1 also builds a wheel and installs it in a fresh venv.
TGC_TEST_WHEEL=1 $PY -m pytest tests -q -rs -p no:cacheprovider
took "mypy and the Python tests"

# The oldest supported torch: install, build, wheel, the no-GPU tests and the C++ example in a
# fresh virtual environment, on a copy of the tracked files (the build there replaces the
# checkout's compiled extension).
if [ "${TGC_SKIP_OLDEST:-0}" != 1 ]; then
  copy=$(mktemp -d)
  trap 'rm -rf "$headers" "$copy"' EXIT
  git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$copy"
  echo "torch $OLDEST_TORCH, the oldest supported release, in a virtual environment:"
  MAX_JOBS=${MAX_JOBS:-2} PYTHON=$PY bash "$copy/scripts/compat_matrix.sh" "$OLDEST_TORCH"
  took "torch $OLDEST_TORCH in a virtual environment"
fi
