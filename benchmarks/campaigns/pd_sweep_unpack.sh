#!/usr/bin/env bash
# Puts an archive of benchmarks/campaigns/pd_sweep_call.sh back into the sweep's folder: POINT/results.json,
# layout-profile.json, calibration.json and the plots become DIR/POINT-results.json,
# DIR/POINT-layout-profile.json, DIR/POINT-calibration.json and DIR/POINT-goodput-*.png; the
# call's log is appended to DIR/POINT-sweep.log under a line naming the call.
#   bash benchmarks/campaigns/pd_sweep_unpack.sh ARCHIVE DIR "call 7 (resumed)"
set -euo pipefail
if [ $# -ne 3 ]; then sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 2; fi
archive=$1 dir=$2 title=$3
work=$(mktemp -d)
tar xzf "$archive" -C "$work"
point=$(ls "$work")
src="$work/$point"
cp "$src/results.json" "$dir/$point-results.json"
for kept in layout-profile calibration; do
  [ -f "$src/$kept.json" ] && cp "$src/$kept.json" "$dir/$point-$kept.json"
done
for plot in "$src"/goodput-*.png; do [ -f "$plot" ] && cp "$plot" "$dir/$point-$(basename "$plot")"; done
{ echo "# $title"; cat "$src/sweep.log"; } >> "$dir/$point-sweep.log"
chmod 644 "$dir/$point"-*
echo "unpacked $point into $dir"
