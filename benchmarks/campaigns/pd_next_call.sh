#!/usr/bin/env bash
# One GPU call of what is left of the 32-layer prefill/decode sweep (TTFT 1 s, TPOT 20 ms, seeds
# 1 and 2): the steps below in order, each resuming its point with benchmarks/campaigns/pd_sweep_call.sh until
# its sweep ends, the next one in the time left; a step already complete is passed over. With
# --gpu-tests the GPU suite runs first ($OUT/gpu-tests.log). The archives come back as
# $OUT/POINT.tgz (POINT-2.tgz for a second step of the same point): unpack them in that order.
#   H100: 1. chat, the static split; 2. chat, the two-SLO policy at slack share 0;
#         3. long-prompt, every scheduler, SGLang's TTFT rule (max(1 s, 1 ms a prompt token))
#   H200: 1. the headline (today's mix), the two-SLO policy at slack share 0; 2. chat (the H200's
#         own, begun there), every scheduler; 3. chat, the two-SLO policy at slack share 0
#   bash benchmarks/campaigns/pd_next_call.sh SECONDS [--gpu-tests]
set -uo pipefail
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
if ! [[ "${1:-}" =~ ^[0-9]+$ ]] || { [ $# -gt 1 ] && [ "$2" != --gpu-tests ]; }; then usage >&2; exit 2; fi
seconds=$1 tests=${2:-}
start=$SECONDS
cd "$(dirname "$0")/../.."
export OUT=${OUT:-$PWD/pd-call}
mkdir -p "$OUT"
sweep_call=${PD_SWEEP_CALL:-benchmarks/campaigns/pd_sweep_call.sh}
if ! python3 -c 'import torch_green_contexts' 2>/dev/null; then
  MAX_JOBS=${MAX_JOBS:-16} python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 \
    || { echo "BUILD FAILED"; tail -40 "$OUT/build.log"; exit 1; }
fi
if [ "$tests" = --gpu-tests ]; then
  python3 -m pytest tests/gpu -q -p no:cacheprovider > "$OUT/gpu-tests.log" 2>&1
  echo "GPU suite: $(tail -1 "$OUT/gpu-tests.log")"
fi

# complete FILE NEED: the point's sweep ended (no "incomplete"), and NEED holds: "static" (the
# static split's configuration was chosen) or "share S" (slack share S is among its settings).
complete() {
  python3 - "$1" "$2" <<'PY'
import json, sys
path, need = sys.argv[1:3]
try:
    with open(path) as f:
        results = json.load(f)
except OSError:
    sys.exit(1)
done = results.get("incomplete") is None and bool(results.get("runs"))
if need == "static":
    done = done and "static" in results.get("chosen", {})
elif need.startswith("share "):
    done = done and float(need[6:]) in results.get("settings", {}).get("more_slack_shares", [])
sys.exit(0 if done else 1)
PY
}

a=(--layers 32 --ttft-slo-ms 1000 --tpot-slo-ms 20 --seeds 1,2)
# step DIR POINT NEED [example arguments...]
step() {
  local dir=$1 point=$2 need=$3
  shift 3
  if complete "$dir/$point-results.json" "$need"; then echo "$point ($need): complete"; return 0; fi
  local left=$((seconds - (SECONDS - start) - 20))  # 20 s to pack the archive
  if [ $left -lt 120 ]; then echo "$point ($need): not begun, $left s left"; exit 0; fi
  echo "$point ($need): $left s"
  bash "$sweep_call" "$dir" "$point" "$left" "${a[@]}" "$@"
  local status=$?
  complete "$dir/$point-results.json" "$need" || exit $status  # out of time (or failed): stop here
}

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
h100=benchmarks/results/2026-12-05-h100-pd-sweep h200=benchmarks/results/2026-12-04-h200-pd-sweep
case "$gpu" in
  *H100*)
    step $h100 chat-32-layers static --workload chat --schedulers chunked,streams,static,pd
    step $h100 chat-32-layers "share 0" --workload chat --schedulers pd --more-slack-shares 0
    step $h100 long-prompt-32-layers static --workload long-prompt --ttft-slo-ms-per-token 1 \
      --schedulers chunked,streams,static,pd --more-slack-shares 0 ;;
  *H200*)
    step $h200 today-32-layers "share 0" --workload today --rates 5,10,15 --schedulers pd --more-slack-shares 0
    step $h200 chat-32-layers static --workload chat --schedulers chunked,streams,static,pd
    step $h200 chat-32-layers "share 0" --workload chat --schedulers pd --more-slack-shares 0 ;;
  *) echo "no plan for $gpu"; exit 3 ;;
esac
echo "every step is complete"
