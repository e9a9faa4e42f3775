# Sourced by the campaign scripts that run from an installed release wheel (nothing compiled):
#   campaign_log NAME        $OUT (default ./gpu-logs) made, $log = $OUT/NAME.log added to with the GPU's
#                            name, driver, clock and power limit, $began now; stamp TEXT logs a line
#                            with the seconds since.
#   enter_wheel_tree WHEEL   WHEEL installed into a temporary folder put on PYTHONPATH, and the
#                            working directory moved to a copy of the checkout without the package,
#                            so that everything run there imports the wheel.
campaign_log() {
  OUT=${OUT:-$PWD/gpu-logs}; mkdir -p "$OUT"
  log=$OUT/$1.log
  began=$(date +%s)
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv >>"$log" 2>&1
}
stamp() { echo "== $* ($(( $(date +%s) - began )) s)" | tee -a "$log"; }
enter_wheel_tree() {
  local site tree
  site=$(mktemp -d) tree=$(mktemp -d)
  python3 -m pip install -q --no-deps --no-index --target "$site" "$1" >>"$log" 2>&1 || { stamp "install failed"; return 1; }
  bash scripts/tree_without_package.sh "$tree"
  cd "$tree" || return 1
  export PYTHONPATH=$site
}
