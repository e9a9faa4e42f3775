#!/usr/bin/env bash
# The GPU suite against an installed wheel of scripts/build_wheel.py, on a GPU machine without
# network, with nothing compiled:
#
#   bash scripts/gpu_wheel_check.sh [WHEEL] [pytest args...]
#
# WHEEL defaults to the dist/ wheel for this python3's CPython. It is installed (pip --no-deps
# --no-index, not editable) into a fresh virtual environment that sees python3's packages (torch,
# cupy, ...) by their folders only, without running their .pth start-up hooks, so that an
# editable install of the checkout cannot stand in for it; the tests run from a copy of the
# checkout without the torch_green_contexts/ folder, so that they and every process they start
# import the installed package. Checks first that the module loaded is the wheel's build for the
# installed torch's release, then runs the diagnostic and `pytest tests/gpu`. Logs: $OUT
# (default ./gpu-logs): wheel-check.log, pytest-gpu-wheel.txt; the last line of wheel-check.log
# is "GPU wheel check: ...".
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
OUT=${OUT:-$root/gpu-logs}
mkdir -p "$OUT"
log=$OUT/wheel-check.log
: >"$log"
PY=${PYTHON:-python3}
tag=$("$PY" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
wheel=${1:-}
if [ -n "$wheel" ] && [ "${wheel%.whl}" != "$wheel" ]; then shift; else wheel=$(ls dist/torch_green_contexts-*-"$tag"-"$tag"-*.whl 2>/dev/null | tail -n 1); fi
[ -f "$wheel" ] || { echo "GPU wheel check: no wheel for $tag (dist/torch_green_contexts-*-$tag-*.whl)" | tee -a "$log"; exit 1; }
wheel=$(realpath "$wheel")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { echo "$*" | tee -a "$log"; }
run() { say "== $*"; "$@" 2>&1 | tee -a "$log"; return "${PIPESTATUS[0]}"; }

say "wheel: ${wheel##*/} ($(du -k "$wheel" | cut -f1) kB); this machine: $("$PY" -c 'import platform; print("Python", platform.python_version(), "glibc", platform.libc_ver()[1])')"
"$PY" -m venv --without-pip "$work/venv" || { say "GPU wheel check: python3 -m venv failed"; exit 1; }
venv_py=$work/venv/bin/python
site=$("$venv_py" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
# python3's package folders, as plain path entries: no .pth hooks (an editable finder among them).
"$PY" -c 'import site, sys; print("\n".join(p for p in sys.path if p.endswith(("site-packages", "dist-packages"))))' \
  >"$site/_system_packages.pth"
run "$PY" -m pip install --no-deps --no-index --target "$site" "$wheel" \
  || { say "GPU wheel check: install failed (the wheel's platform tag names the glibc it needs)"; exit 1; }

bash scripts/tree_without_package.sh "$work/tree"

cd "$work/tree"
status=0
run "$venv_py" - <<'EOF' || { say "GPU wheel check: the installed wheel did not load"; exit 1; }
import pathlib, sys, torch
import torch_green_contexts as t
from torch_green_contexts import _native
package = pathlib.Path(t.__file__).resolve().parent
assert pathlib.Path(sys.prefix).resolve() in package.parents, f"imported from {package}, not the wheel"
assert _native.LOADED_FROM == "wheel", _native.LOADED_FROM
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}): loaded {_native._C.__file__}, built against "
      f"torch {_native.BUILT_AGAINST_TORCH}; driver {_native._C.installed_driver_version()}; CUDA available: {torch.cuda.is_available()}")
EOF
run "$venv_py" -m torch_green_contexts || status=1
say "== pytest tests/gpu $*"
rc=0
"$venv_py" -m pytest tests/gpu -q -rs -p no:cacheprovider "$@" >"$OUT/pytest-gpu-wheel.txt" 2>&1 || rc=$?
tail -n 25 "$OUT/pytest-gpu-wheel.txt" | tee -a "$log"
[ "$rc" = 0 ] || status=1
result=$(grep -E ' in [0-9.]+s' "$OUT/pytest-gpu-wheel.txt" | tail -n 1)
say "GPU wheel check: $(sed -n 's/^torch \([^ ]*\) .*loaded .*built against torch \([^;]*\);.*/torch \1, build for \2/p' "$log" | head -n 1); pytest tests/gpu: ${result:-no result} (exit $rc)"
exit "$status"
