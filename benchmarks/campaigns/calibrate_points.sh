#!/usr/bin/env bash
# One GPU call that measures the simulator's calibration at committed sweep points of this GPU
# model, from an installed release wheel of scripts/build_wheel.py (nothing compiled on the
# machine): for each POINT (today or chat), python -m examples.pd --calibrate-only with the
# sweep's slots and layout profile. Logs and calibrations go to $OUT, the tables as one archive,
# $OUT/calibrations.tgz; a point cut short by POINT_SECONDS (default 280) writes nothing.
#   bash benchmarks/campaigns/calibrate_points.sh WHEEL POINT...
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 2 ] && [ -f "$1" ] || { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
wheel=$(realpath "$1"); shift
source benchmarks/campaigns/wheel_env.sh
campaign_log calibrate-points
enter_wheel_tree "$wheel" || exit 1
gpu=$(python3 -c "import torch; print(torch.cuda.get_device_name(0))")
overlapped=
case "$gpu" in
  *H200*) sweep=2026-12-04-h200-pd-sweep ;;
  *H100*) sweep=2026-12-05-h100-pd-sweep overlapped=2026-12-07-h100-calibration ;;
  *) stamp "no committed sweep of $gpu"; exit 1 ;;
esac
status=0
for point in "$@"; do
  profile=benchmarks/results/$sweep/$point-32-layers-layout-profile.json
  # the H100 sweep's profiles predate the overlapped layouts that a calibration times
  [ -n "$overlapped" ] && [ -f "benchmarks/results/$overlapped/$point-32-layers-layout-profile.json" ] &&
    profile=benchmarks/results/$overlapped/$point-32-layers-layout-profile.json
  [ -f "$profile" ] && [ -f "benchmarks/results/$sweep/$point-32-layers-sweep.log" ] || { stamp "no committed $point point in $sweep"; status=1; continue; }
  slots=$(sed -n 's/.*KV cache .*(\([0-9]*\) slots.*/\1/p' "benchmarks/results/$sweep/$point-32-layers-sweep.log" | head -n 1)
  timeout "${POINT_SECONDS:-280}" python3 -m examples.pd --calibrate-only --layers 32 --workload "$point" \
    --ttft-slo-ms 1000 --tpot-slo-ms 20 --max-slots "$slots" --layout-profile "$profile" \
    --out "$OUT/calibration-$point" >"$OUT/calibration-$point.log" 2>&1
  rc=$?; [ "$rc" = 0 ] || status=1
  stamp "calibration of the $point point ($slots slots, $sweep) rc=$rc"
done
cd "$OUT" && tar czf calibrations.tgz --exclude=calibrations.tgz . && stamp "status $status"
exit "$status"
