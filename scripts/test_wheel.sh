#!/usr/bin/env bash
# The no-GPU tests against an installed wheel of scripts/build_wheel.py, as a user without a
# compiler gets it:
#
#   bash scripts/test_wheel.sh WHEEL PYTHON TORCH_VERSION
#
# makes a fresh virtual environment of PYTHON, installs torch==TORCH_VERSION and the test
# dependencies from PyPI, then the wheel (pip install --no-deps, nothing compiled), and runs
# `pytest tests` with no C/C++ compiler on PATH, from a copy of the checkout without the
# torch_green_contexts/ folder, so that every test and every process a test starts imports the
# installed package. tests/test_packaging.py checks (TGC_INSTALLED_WHEEL=1) that the module
# loaded is the wheel's build for the installed torch's release. The simulated-driver tests use
# tests/cpp/build/libtgc_simdriver.so when it is built (they skip otherwise). Ends with the
# line "wheel tests: torch VERSION, Python X.Y: N passed, N failed, N skipped".
set -euo pipefail
[ $# -eq 3 ] || { sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
wheel=$(realpath "$1") python=$2 torch_version=$3
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$python" -m venv "$work/venv"
venv_py=$work/venv/bin/python
echo "torch $torch_version, $("$venv_py" --version): installing torch and the test dependencies"
"$venv_py" -m pip install -q "torch==$torch_version" pytest hypothesis numpy matplotlib
"$venv_py" -m pip install -q --no-deps "$wheel"

# The checkout's tracked files, less the package (and anything built into it).
bash scripts/tree_without_package.sh "$work/tree"
if [ -f tests/cpp/build/libtgc_simdriver.so ]; then
  mkdir -p "$work/tree/tests/cpp/build"
  cp tests/cpp/build/libtgc_simdriver.so "$work/tree/tests/cpp/build/"
fi

# PATH without compilers: every other program of the usual folders.
mkdir "$work/bin"
for dir in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
  [ -d "$dir" ] || continue
  for program in "$dir"/*; do
    name=${program##*/}
    case "$name" in
      cc|c++|cpp|gcc|g++|gcc-*|g++-*|cpp-*|clang|clang++|clang-*|clang++-*|*-linux-gnu-gcc*|*-linux-gnu-g++*|*-linux-gnu-cpp*|nvcc|ld|ld.*|*-linux-gnu-ld*|as|*-linux-gnu-as) continue ;;
    esac
    [ -x "$program" ] && [ ! -e "$work/bin/$name" ] && ln -s "$program" "$work/bin/$name"
  done
done

rc=0
(cd "$work/tree" && env -u CC -u CXX -u CUDA_HOME PATH="$work/venv/bin:$work/bin" TGC_INSTALLED_WHEEL=1 \
  "$venv_py" -m pytest tests -q -rs -p no:cacheprovider) 2>&1 | tee "$work/pytest.txt" || rc=$?
result=$(grep -E ' in [0-9.]+s' "$work/pytest.txt" | tail -n 1 || true)
count() { echo "$result" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
python_version=$("$venv_py" -c 'import platform; print(platform.python_version())')
installed=$("$venv_py" -c 'import torch; print(torch.__version__)')
echo "wheel tests: torch $installed, Python $python_version: $(count passed) passed, $(count failed) failed, $(count skipped) skipped$(
  errors=$(count 'errors?'); [ "$errors" = 0 ] || echo ", $errors errors")"
exit "$rc"
