#!/usr/bin/env bash
# Shows that no GPU test depends on the order the tests run in: the whole tests/gpu suite, then
# each tests/gpu/test_gpu_*.py alone, each in a fresh `python3 -m pytest`, for N rounds
# (default 2), then the suite once more with its files in reverse order. Each run's output goes
# to LOGDIR/<run>.log (default gpu-logs/order), its pytest summary line to LOGDIR/summary.log;
# a table of every run follows. Exits 1 if any run failed, errored or printed no summary.
#   bash scripts/gpu_order_check.sh [--rounds N] [--first N] [--no-reverse] [LOGDIR]
# --first N numbers the rounds from N (a check split over several calls); --no-reverse skips the
# reversed suite.
# Nothing is installed: build the package first (e.g. bash scripts/gpu_check.sh --no-tests).
set -euo pipefail
rounds=2 first=1 reverse=1 logs=
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --rounds) [ $# -ge 2 ] || { echo "--rounds needs a number" >&2; exit 2; }; rounds=$2; shift ;;
    --first) [ $# -ge 2 ] || { echo "--first needs a number" >&2; exit 2; }; first=$2; shift ;;
    --no-reverse) reverse=0 ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *) logs=$1 ;;
  esac
  shift
done
for n in "$rounds" "$first"; do
  case "$n" in ''|*[!0-9]*) echo "--rounds and --first need whole numbers, got '$n'" >&2; exit 2 ;; esac
done
if [ -n "$logs" ]; then mkdir -p "$logs" && logs=$(cd "$logs" && pwd); fi  # as given, from here
cd "$(dirname "$0")/.."
logs=${logs:-$PWD/gpu-logs/order}
mkdir -p "$logs"
unset TGC_REPORT_DIR  # these runs write no figures over gpu_check.sh's
export PYTHONUNBUFFERED=1

files=(tests/gpu/test_gpu_*.py)
reversed=()
for ((i = ${#files[@]} - 1; i >= 0; i--)); do reversed+=("${files[i]}"); done
summary="$logs/summary.log"
: > "$summary"
rows=() status=0

count() {  # count WORD LINE: the number before WORD in a pytest summary line (0 if none)
  local n
  n=$(grep -oE "[0-9]+ $1" <<< "$2" | head -1 | cut -d' ' -f1) || true
  echo "${n:-0}"
}

# run NAME FILE...: one fresh pytest over FILE... in the order given (pytest keeps it)
run() {
  local name=$1 rc=0 line
  shift
  echo "== $name: $*"
  python3 -m pytest -q -rs -p no:cacheprovider "$@" > "$logs/$name.log" 2>&1 || rc=$?
  # pytest's last line is its summary ("3 passed, 1 skipped in 9.81s"); anything else: it crashed
  line=$(grep -v '^[[:space:]]*$' "$logs/$name.log" | tail -1 | tr -d '=' | sed 's/^ *//; s/ *$//') || true
  grep -qE '^(no tests ran|[0-9]+ [a-z]+.*) in [0-9.]+s' <<< "$line" || line=
  echo "$name: ${line:-no summary} (exit $rc)" | tee -a "$summary"
  local passed failed skipped errors
  passed=$(count passed "$line") failed=$(count failed "$line")
  skipped=$(count skipped "$line") errors=$(count error "$line")
  rows+=("$(printf '%-34s %7s %7s %8s %7s' "$name" "$passed" "$failed" "$skipped" "$errors")")
  if [ "$rc" != 0 ] || [ -z "$line" ] || [ "$failed" != 0 ] || [ "$errors" != 0 ]; then
    rows[-1]+="   <- exit $rc"
    status=1
  fi
}

for ((r = first; r < first + rounds; r++)); do
  run "round$r-suite" "${files[@]}"
  for file in "${files[@]}"; do
    name=${file##*/}
    run "round$r-${name%.py}" "$file"
  done
done
[ "$reverse" = 0 ] || run "reversed-suite" "${reversed[@]}"

echo
printf '%-34s %7s %7s %8s %7s\n' run passed failed skipped errors | tee -a "$summary"
printf '%s\n' "${rows[@]}" | tee -a "$summary"
echo "gpu_order_check status $status (logs in $logs)" | tee -a "$summary"
exit $status
