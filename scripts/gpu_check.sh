#!/usr/bin/env bash
# One call on a GPU machine: build, report, GPU tests, split figures, the C++ example and, when
# asked, the benchmarks and the serving example. Everything is logged to $OUT/gpu.log (default
# ./gpu-logs), the build to $OUT/build.log, benchmark results to $OUT/bench/ and the serving
# example's to $OUT/serving/.
#   bash scripts/gpu_check.sh [--bench] [--serving] [--pd] [--no-tests] [pytest args...]
# --pd runs the prefill/decode example's smoke run (python -m examples.pd --quick, its files in
# /tmp) and, when PD_ARGS is set, its sweep with those arguments into $OUT/pd, stopped after
# PD_TIMEOUT seconds (default 300; results.json is written after every run).
# BENCH_ONLY=layouts,membound limits the benchmark suites; SERVING_ARGS are passed to
# examples/serving.py (e.g. "--deadline-us 1500").
set -uo pipefail
for arg in "$@"; do  # before anything is installed
  case "$arg" in -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
done
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-logs}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TGC_REPORT_DIR="$OUT"
bench=0 serving=0 tests=1 pd=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bench) bench=1 ;;
    --serving) serving=1 ;;
    --pd) pd=1 ;;
    --no-tests) tests=0 ;;
    --bench-only) bench=1; tests=0 ;;
    *) break ;;
  esac
  shift
done

status=0
log="$OUT/gpu.log"
: > "$log"
run() { echo "== $*" | tee -a "$log"; "$@" 2>&1 | tee -a "$log"; return "${PIPESTATUS[0]}"; }
run nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
run python3 -c 'import torch; print("torch", torch.__version__)'
TORCH_GREEN_CONTEXTS_BENCHMARKS=1 MAX_JOBS=${MAX_JOBS:-16} python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 \
  || { echo "BUILD FAILED" | tee -a "$log"; tail -40 "$OUT/build.log"; exit 1; }
echo "build ok" | tee -a "$log"
if [ "$tests" = 1 ]; then
  run python3 -m torch_green_contexts || status=1
  run python3 -m pytest tests -q -rs -p no:cacheprovider "$@" || status=1
  run python3 scripts/split_report.py || status=1
  MAX_JOBS=${MAX_JOBS:-16} run bash scripts/build_cpp_example.sh || status=1
fi
if [ "$serving" = 1 ]; then
  # shellcheck disable=SC2086
  run python3 examples/serving.py --out "$OUT/serving" ${SERVING_ARGS:-} || status=1
fi
if [ "$pd" = 1 ]; then
  run python3 -m examples.pd --quick --out /tmp/pd-quick || status=1
  if [ -n "${PD_ARGS:-}" ]; then
    # shellcheck disable=SC2086
    run timeout "${PD_TIMEOUT:-300}" python3 -m examples.pd $PD_ARGS --out "$OUT/pd" || status=1
  fi
fi
if [ "$bench" = 1 ]; then
  run python3 -m benchmarks --out "$OUT/bench" ${BENCH_ONLY:+--only "$BENCH_ONLY"} || status=1
fi
echo "gpu_check status $status" | tee -a "$log"
exit $status
