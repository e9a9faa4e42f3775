#!/usr/bin/env bash
# One GPU call of a prefill/decode sweep (examples/pd) that takes several calls: builds the
# extension unless it imports, continues the sweep of one point from its files in DIR
# (POINT-results.json, POINT-layout-profile.json and POINT-calibration.json, when they exist) for
# at most SECONDS, and packs everything the sweep wrote, with its log, into one archive, $OUT/POINT.tgz, so
# that a limit on the number of files brought back cannot leave the results behind (a second call of
# the same point in one machine call packs $OUT/POINT-2.tgz, and so on; it resumes from the first's
# results, which are copied into DIR here). On the machine that keeps the results,
# benchmarks/campaigns/pd_sweep_unpack.sh puts the archives back into DIR, in that order.
#   bash benchmarks/campaigns/pd_sweep_call.sh DIR POINT SECONDS [python -m examples.pd arguments...]
# e.g. bash benchmarks/campaigns/pd_sweep_call.sh benchmarks/results/2026-12-04-h200-pd-sweep today-32-layers 420 \
#        --layers 32 --workload today --ttft-slo-ms 1000 --tpot-slo-ms 20 --rates 5,10,15 --seeds 1,2
set -uo pipefail
if [ $# -lt 3 ] || [ "$1" = -h ] || [ "$1" = --help ]; then sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; fi
dir=$1 point=$2 seconds=$3
shift 3
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/pd-call}
work=$(mktemp -d)
mkdir -p "$OUT" "$work/$point"
log="$work/$point/sweep.log"
if ! python3 -c 'import torch_green_contexts' 2>/dev/null; then
  MAX_JOBS=${MAX_JOBS:-16} python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 \
    || { echo "BUILD FAILED"; tail -40 "$OUT/build.log"; exit 1; }
fi
resume=()
[ -f "$dir/$point-results.json" ] && resume+=(--resume "$dir/$point-results.json")
[ -f "$dir/$point-layout-profile.json" ] && resume+=(--layout-profile "$dir/$point-layout-profile.json")
[ -f "$dir/$point-calibration.json" ] && resume+=(--calibration "$dir/$point-calibration.json")
PYTHONUNBUFFERED=1 python3 -m examples.pd "$@" "${resume[@]}" --time-budget-s "$seconds" --out "$work/$point" \
  > "$log" 2>&1
status=$?
echo "exit status $status" >> "$log"
grep -E '^\[|time budget|^results in|Error|error' "$log" | tail -30
archive="$OUT/$point.tgz" n=1
while [ -e "$archive" ]; do n=$((n + 1)); archive="$OUT/$point-$n.tgz"; done
tar czf "$archive" -C "$work" "$point"
[ -f "$work/$point/results.json" ] && cp "$work/$point/results.json" "$dir/$point-results.json"
for kept in layout-profile calibration; do
  [ -f "$work/$point/$kept.json" ] && [ ! -f "$dir/$point-$kept.json" ] && cp "$work/$point/$kept.json" "$dir/$point-$kept.json"
done
exit $status
