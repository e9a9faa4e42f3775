#!/usr/bin/env bash
# benchmarks/campaigns/pd_sweep_call.sh from an installed release wheel of scripts/build_wheel.py,
# nothing compiled on the GPU machine: one call of a sweep that takes several, resuming POINT
# from its files in DIR for at most SECONDS. The archive comes back as $OUT/POINT.tgz
# (benchmarks/campaigns/pd_sweep_unpack.sh puts it back), the call's log as $OUT/sweep-call.log.
#   bash benchmarks/campaigns/wheel_sweep_call.sh WHEEL DIR POINT SECONDS [python -m examples.pd arguments...]
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 4 ] && [ -f "$1" ] && [ -d "$2" ] && [[ "$4" =~ ^[0-9]+$ ]] || { sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
wheel=$(realpath "$1")
shift
source benchmarks/campaigns/wheel_env.sh
campaign_log sweep-call
enter_wheel_tree "$wheel" || exit 1
bash benchmarks/campaigns/pd_sweep_call.sh "$@" >>"$log" 2>&1
rc=$?
stamp "sweep call of $2 in $1 rc=$rc"
exit "$rc"
