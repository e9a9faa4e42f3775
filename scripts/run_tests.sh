#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds the extension against the installed
# PyTorch, runs the C++ core tests (with the ABI layout check against a real 13.4+ cuda.h)
# and the Python tests, and builds the documentation. GPU tests run where a GPU and driver are
# present and skip elsewhere. Ends with one line, "SUMMARY: ...", of what passed and failed
# (also when a part fails, which stops the script with a non-zero exit).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# The oldest torch release supported (torch_green_contexts/_torch_version.py's MINIMUM_TORCH, at
# its latest patch), the newest (scripts/torch_releases.txt's last) and the oldest Python the
# package declares (pyproject's requires-python): the wheel part, last, tests them.
OLDEST_TORCH=2.6.0
NEWEST_TORCH=$(grep -vE '^(#|$)' scripts/torch_releases.txt | tail -n 1)
OLDEST_PYTHON=3.9
began=$(date +%s)
part=$began
took() {  # prints how long the part just ended took
  local now; now=$(date +%s)
  echo "== $1: $((now - part)) s (total $((now - began)) s)"
  part=$now
}

# The summary: each part adds its result as it ends; the exit trap prints it, naming the part
# that was running when the script stopped on a failure.
summary=""
running="install and build"
note() { summary="${summary:+$summary; }$1"; }
cleanup=()
finish() {
  local rc=$?
  set +e
  [ ${#cleanup[@]} -eq 0 ] || rm -rf "${cleanup[@]}"
  [ "$rc" = 0 ] || note "FAILED: $running (exit $rc)"
  echo "SUMMARY: $summary"
  exit "$rc"
}
trap finish EXIT
logs=$(mktemp -d)
cleanup+=("$logs")

$PY -m pip install -q torch "setuptools>=77" wheel pytest hypothesis numpy gcovr matplotlib mypy
$PY -m pip install -q --no-build-isolation --no-deps -e .
torch_version=$($PY -c 'import torch; print(torch.__version__)')
note "torch $torch_version"
took "install and build against torch $torch_version"

running="apt-get install of libgtest-dev and cmake"
if [ ! -f /usr/include/gtest/gtest.h ] || ! command -v cmake >/dev/null; then
  apt-get update -qq && apt-get install -y -qq libgtest-dev cmake >/dev/null
fi

# A real cuda.h of 13.4 or newer, from pip's CUDA runtime wheel, for the layout check.
running="download of cuda.h 13.4+"
headers=$(mktemp -d)
cleanup+=("$headers")
$PY -m pip download -q --no-deps "nvidia-cuda-runtime>=13.4,<14" -d "$headers"
(cd "$headers" && $PY -m zipfile -e ./*.whl .)
include_13_4=$(dirname "$(find "$headers" -path '*include/cuda.h' | head -n 1)")

# C++ tests of the core: rules, ABI layout, and the simulated driver for every driver version
# (12.4, 12.5, 13.0, 13.1, 13.4), built with line coverage of the driver-facing core.
running="C++ tests (ctest)"
build=tests/cpp/build
find "$build" -name '*.gcda' -delete 2>/dev/null || true
cmake -S tests/cpp -B "$build" -DTGC_COVERAGE=ON -DTGC_CUDA_INCLUDE_13_4="$include_13_4" >/dev/null
cmake --build "$build" -j2
rc=0
ctest --test-dir "$build" --output-on-failure 2>&1 | tee "$logs/ctest.txt" || rc=$?
# "100% tests passed, 0 tests failed out of 33"
counts=$(grep -oE '[0-9]+ tests failed out of [0-9]+' "$logs/ctest.txt" | tail -n 1 || true)
if [ -n "$counts" ]; then
  failed=${counts%% *} total=${counts##* }
  note "ctest $((total - failed))/$total passed"
fi
[ "$rc" = 0 ] || exit "$rc"
took "C++ tests (ctest)"

# gtest_versions LABEL BINARY LIBRARY VERSION...: runs BINARY against the simulated driver of
# each VERSION, printing gtest's PASSED/FAILED lines, and notes how many versions passed (under
# LABEL up to its first comma).
gtest_versions() {
  local label=$1 binary=$2 library=$3 version out rc passed=0 total=0
  shift 3
  local name=${label%%,*}
  for version in "$@"; do
    total=$((total + 1))
    printf '%s %s: ' "$label" "$version"
    rc=0
    out=$(TSAN_OPTIONS="halt_on_error=1 exitcode=66" TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY="$library" \
      TGC_SIM_DRIVER_VERSION=$version "$binary" --gtest_brief=1 | grep -E '^\[  (PASSED|FAILED) ' | tr '\n' ' ') \
      || rc=$?
    echo "$out"
    if [ "$rc" != 0 ]; then
      note "$name $passed/$total versions passed, $version failed"
      return "$rc"
    fi
    passed=$((passed + 1))
  done
  note "$name $passed/$total versions passed"
}

running="the core against the simulated driver"
gtest_versions "simulated driver" "$build/sim_tests" "$PWD/$build/libtgc_simdriver.so" \
  12040 12050 13000 13010 13040
took "the core against the simulated driver, per version"
# The concurrency tests again under ThreadSanitizer (core and simulated driver instrumented).
running="ThreadSanitizer"
tsan=tests/cpp/build-tsan
cmake -S tests/cpp -B "$tsan" -DCMAKE_CXX_FLAGS="-fsanitize=thread -O1 -g" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build "$tsan" -j2 --target concurrency_tests tgc_simdriver
gtest_versions "ThreadSanitizer, simulated driver" "$tsan/concurrency_tests" "$PWD/$tsan/libtgc_simdriver.so" \
  12040 13000 13040
took "ThreadSanitizer"
running="coverage"
echo "Line coverage of the driver-facing core (csrc/core), C++ tests with the simulated driver:"
$PY -m gcovr --root . --filter 'csrc/core/' --gcov-ignore-parse-errors=negative_hits.warn_once_per_file "$build" \
  | tee "$logs/coverage.txt"
coverage=$(grep -E '^TOTAL' "$logs/coverage.txt" | grep -oE '[0-9.]+%' | tail -n 1 || true)
note "coverage ${coverage:-unknown} of csrc/core"

running="the C++ package and example"
echo "The C++ package and the LibTorch example (examples/cpp) build against the installed torch:"
bash scripts/build_cpp_example.sh --no-run
note "C++ example built"

took "coverage, C++ package and example"
running="mypy"
echo "mypy --strict on the public package and the examples:"
$PY -m mypy --strict torch_green_contexts examples
note "mypy ok"

# Python tests; TGC_TEST_WHEEL=1 also builds a wheel and installs it in a fresh venv.
running="pytest"
rc=0
TGC_TEST_WHEEL=1 $PY -m pytest tests -q -rs -p no:cacheprovider 2>&1 | tee "$logs/pytest.txt" || rc=$?
result=$(grep -E '[0-9]+ (passed|failed|skipped|errors?)' "$logs/pytest.txt" | grep -E ' in [0-9.]+s' | tail -n 1 || true)
pytest_count() { echo "$result" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
if [ -n "$result" ]; then
  errors=$(pytest_count 'errors?')
  note "pytest $(pytest_count passed) passed, $(pytest_count failed) failed, $(pytest_count skipped) skipped$(
    [ "$errors" = 0 ] || echo ", $errors errors")"
fi
[ "$rc" = 0 ] || exit "$rc"
took "mypy and the Python tests"

# The documentation, with the API reference from the docstrings: Sphinx, warnings as errors.
running="docs"
PYTHON=$PY bash scripts/build_docs.sh
note "docs built"
took "docs (Sphinx, warnings as errors)"

# The multi-torch wheel, installed as users get it: scripts/build_wheel.py builds, against each
# release's own headers, the wheel of this Python for the oldest and the newest torch and the wheel
# of the oldest Python the package declares (it has no wheel of the newest torch); then
# scripts/test_wheel.sh installs each into a fresh virtual environment with that torch from PyPI
# and runs the no-GPU tests there with no compiler on PATH. TGC_SKIP_WHEELS=1 skips this part.
if [ "${TGC_SKIP_WHEELS:-${TGC_SKIP_OLDEST:-0}}" != 1 ]; then
  running="the multi-torch wheels (build)"
  # The first interpreter that runs and is that version (a pyenv shim on PATH may not run).
  oldest_py=""
  for candidate in ${TGC_OLDEST_PYTHON:-} "$(command -v "python$OLDEST_PYTHON" || true)" \
      "$(pyenv root 2>/dev/null || echo ~/.pyenv)"/versions/"$OLDEST_PYTHON".*/bin/"python$OLDEST_PYTHON"; do
    if [ -n "$candidate" ] && [ "$("$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$OLDEST_PYTHON" ]; then
      oldest_py=$candidate
      break
    fi
  done
  if [ -z "$oldest_py" ]; then
    echo "Python $OLDEST_PYTHON, the oldest the package declares (pyproject's requires-python), is not on this" \
      "machine: set TGC_OLDEST_PYTHON to its interpreter" >&2
    exit 1
  fi
  wheels=$(mktemp -d)
  cleanup+=("$wheels")
  MAX_JOBS=${MAX_JOBS:-2} $PY scripts/build_wheel.py --torch "$OLDEST_TORCH" --torch "$NEWEST_TORCH" \
    --python "$PY" --python "$oldest_py" --out "$wheels" 2>&1 | tee "$logs/wheels.txt"
  sizes=$(grep -oE '^wheel: .*/[^ ]+ \([0-9.]+ MB; torch [^;]+' "$logs/wheels.txt" \
    | sed -E 's/^wheel: .*-(cp[0-9]+)-cp[0-9]+-[^ ]+ \(([0-9.]+ MB); torch (.*)/\1 wheel \2 (torch \3)/' | paste -sd'|' - \
    | sed 's/|/ and /g')
  note "built the $sizes"
  took "the multi-torch wheels (build)"
  this_tag=$($PY -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
  oldest_tag=$("$oldest_py" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
  for combination in "$PY $this_tag $OLDEST_TORCH" "$PY $this_tag $NEWEST_TORCH" "$oldest_py $oldest_tag $OLDEST_TORCH"; do
    read -r python tag torch_version <<<"$combination"
    running="the wheel under torch $torch_version, $tag"
    rc=0
    bash scripts/test_wheel.sh "$(ls "$wheels"/torch_green_contexts-*-"$tag"-"$tag"-*.whl)" "$python" "$torch_version" 2>&1 \
      | tee "$logs/wheel-test.txt" || rc=$?
    line=$(grep -E '^wheel tests: ' "$logs/wheel-test.txt" | tail -n 1 | sed 's/^wheel tests: //' || true)
    note "wheel, ${line:-torch $torch_version $tag: no result}"
    [ "$rc" = 0 ] || exit "$rc"
    took "the wheel under torch $torch_version, $tag"
  done
else
  note "wheels skipped (TGC_SKIP_WHEELS=1)"
fi
