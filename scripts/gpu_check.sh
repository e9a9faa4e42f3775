#!/usr/bin/env bash
# One call on a GPU machine: build, report, GPU tests, split figures, and (with --bench) the
# benchmarks. Logs go to $OUT (default ./gpu-logs).
#   bash scripts/gpu_check.sh [--bench] [pytest args...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-logs}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
bench=0
if [ "${1:-}" = "--bench" ]; then bench=1; shift; fi

status=0
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; python3 -c 'import torch; print("torch", torch.__version__)'; } 2>&1 | tee "$OUT/machine.txt"
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { echo "BUILD FAILED"; tail -40 "$OUT/build.log"; exit 1; }
echo "build ok"
python3 -m torch_green_contexts 2>&1 | tee "$OUT/main.txt" || status=1
python3 -m pytest tests -q -rs -p no:cacheprovider "$@" 2>&1 | tee "$OUT/pytest.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
python3 scripts/split_report.py 2>&1 | tee "$OUT/splits.txt" || status=1
if [ "$bench" = 1 ]; then
  python3 -m benchmarks --out "$OUT" 2>&1 | tee "$OUT/bench.txt" || status=1
fi
exit $status
