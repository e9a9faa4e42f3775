#!/usr/bin/env bash
# One GPU call that checks a release wheel of scripts/build_wheel.py, nothing compiled on the
# machine: the whole GPU suite from the installed wheel (scripts/gpu_wheel_check.sh), then
# the policy's decision-cost benchmark (python -m benchmarks --only pd_policy), then each GPU
# test file named after WHEEL alone in a fresh pytest, all importing the installed wheel; with
# seconds left over, the simulator's calibration of the committed sweep point of this GPU model
# (CALIBRATE_SECONDS, default 0: off; the H200's today point, the H100's chat point), then the
# engine's device timelines at one point of today's mix (TRACE_SECONDS, default 0: off; python -m
# examples.pd --trace-runs) with the GPU clocks logged beside them, each cut short to end END_BY
# seconds after the start where that is set.
# Everything goes to $OUT: logs, and the tables as one archive, $OUT/results.tgz.
#   bash benchmarks/campaigns/wheel_release_check.sh WHEEL [tests/gpu/test_gpu_X.py ...]
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] && [ -f "$1" ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
wheel=$(realpath "$1"); shift
source benchmarks/campaigns/wheel_env.sh
campaign_log release-check
status=0
OUT=$OUT/suite bash scripts/gpu_wheel_check.sh "$wheel" || status=1
stamp "suite: $(tail -n 1 "$OUT/suite/wheel-check.log")"

enter_wheel_tree "$wheel" || exit 1
python3 -c "import torch_green_contexts._native as n; assert n.LOADED_FROM == 'wheel'; print('alone runs import', n._C.__file__)" \
  >>"$log" 2>&1 || { stamp "the wheel does not load"; exit 1; }
python3 -m benchmarks --only pd_policy --out "$OUT/bench" >"$OUT/bench.log" 2>&1
rc=$?; [ "$rc" = 0 ] || status=1
stamp "pd_policy benchmark rc=$rc"; tail -n 12 "$OUT/bench.log" | tee -a "$log"
for file in "$@"; do
  name=$(basename "$file" .py)
  python3 -m pytest "$file" -q -rs -p no:cacheprovider >"$OUT/alone-$name.txt" 2>&1 || status=1
  stamp "alone $file: $(grep -E ' in [0-9.]+s' "$OUT/alone-$name.txt" | tail -n 1)"
done

seconds_left() {  # $1 seconds wanted, no more than END_BY allows
  local left=$1
  if [ -n "${END_BY:-}" ]; then  # seconds after the start by which the call must be over
    local room=$(( END_BY - ($(date +%s) - began) - 20 ))
    [ "$room" -lt "$left" ] && left=$room
  fi
  echo "$left"
}
gpu=$(python3 -c "import torch; print(torch.cuda.get_device_name(0))")
left=$(seconds_left "${CALIBRATE_SECONDS:-0}")
if [ "$left" -gt 60 ] && [ "$left" -lt "${CALIBRATE_SECONDS:-0}" ]; then  # a calibration cut short writes nothing
  stamp "calibration skipped: $left s left, ${CALIBRATE_SECONDS} s wanted"
elif [ "$left" -gt 60 ]; then
  case "$gpu" in
    *H200*) point=today; sweep=2026-12-04-h200-pd-sweep; slots=82 ;;
    *H100*) point=chat; sweep=2026-12-07-h100-calibration; slots=96 ;;  # its profile has the overlapped layouts
    *) point= ;;
  esac
  if [ -n "$point" ]; then
    timeout "$left" python3 -m examples.pd --calibrate-only --layers 32 --workload "$point" --ttft-slo-ms 1000 \
      --tpot-slo-ms 20 --max-slots "$slots" \
      --layout-profile "benchmarks/results/$sweep/$point-32-layers-layout-profile.json" \
      --out "$OUT/calibration-$point" >"$OUT/calibration-$point.log" 2>&1
    rc=$?; [ "$rc" = 0 ] || status=1
    stamp "calibration of the $point point rc=$rc"
  else
    stamp "calibration skipped: no committed sweep of $gpu"
  fi
fi
left=$(seconds_left "${TRACE_SECONDS:-0}")
if [ "$left" -gt 60 ]; then
  if [[ "$gpu" == *H200* ]]; then
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
      --format=csv -lms 250 >"$OUT/trace-smi.csv" 2>&1 &
    smi=$!
    timeout "$left" python3 -m examples.pd --layers 32 --workload today --ttft-slo-ms 1000 --tpot-slo-ms 20 \
      --rates 10 --seeds 1 --schedulers chunked,streams,static,pd --budgets 256 --admission fcfs \
      --min-rates 1 --max-rates 1 --static-candidates 1 --trace-runs --max-slots 82 \
      --calibration benchmarks/results/2026-12-06-h200-calibration/today-32-layers-calibration.json \
      --layout-profile benchmarks/results/2026-12-04-h200-pd-sweep/today-32-layers-layout-profile.json \
      --out "$OUT/trace" >"$OUT/trace.log" 2>&1
    rc=$?; [ "$rc" = 0 ] || [ "$rc" = 124 ] || status=1
    stamp "trace runs rc=$rc (124: stopped at TRACE_SECONDS)"; kill "$smi"; wait "$smi" 2>/dev/null
  else
    stamp "trace runs skipped: the committed calibration is the H200's, this is $gpu"
  fi
fi
cd "$OUT" && tar czf results.tgz --exclude=results.tgz . && stamp "status $status"
exit "$status"
