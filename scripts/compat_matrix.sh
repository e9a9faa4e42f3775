#!/usr/bin/env bash
# Which PyTorch releases the package builds and passes its no-GPU tests on.
#
#   bash scripts/compat_matrix.sh [--markdown PATH] [--json PATH] [--fresh] [--keep-venvs] [VERSION ...]
#
# For each torch VERSION (default: scripts/torch_releases.txt, the latest patch of every minor release from 2.6 on), in a
# fresh virtual environment under .venvs/: installs torch==VERSION with setuptools, wheel,
# pytest, hypothesis and numpy; builds the extension as the README does
# (`pip install --no-build-isolation --no-deps -e .`); builds a wheel; runs the tests that need
# no GPU (GPU tests skip themselves; the simulated-driver tests use tests/cpp/build's
# libtgc_simdriver.so, built once here with cmake); builds the C++ example against that torch
# (scripts/build_cpp_example.sh --no-run). Each venv is deleted after its row (--keep-venvs keeps
# them). One row per version goes to a JSON file (default build/compat/matrix.json) and a
# Markdown table (default build/compat/matrix.md); rows of versions not run this time are kept
# from an earlier JSON file unless --fresh. Logs of every step: build/compat/logs/torch-VERSION.log.
# Exits non-zero when any version run this time fails.
#
# Everything compiles with one job (MAX_JOBS, default 1). PYTHON (default python3) is the
# interpreter the venvs are made from; nothing is installed into it. The editable build
# replaces the checkout's compiled extension (torch_green_contexts/_C*.so) and build/'s
# setuptools trees; they are cleared before each version so that nothing compiled against
# another torch is reused.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BASE_PY=${PYTHON:-python3}
export MAX_JOBS=${MAX_JOBS:-1}

mapfile -t DEFAULT_VERSIONS < <(grep -vE "^(#|$)" scripts/torch_releases.txt)
markdown=build/compat/matrix.md
json=build/compat/matrix.json
fresh=0
keep_venvs=0
versions=()
while [ $# -gt 0 ]; do
  case "$1" in
    --markdown) markdown=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --fresh) fresh=1; shift ;;
    --keep-venvs) keep_venvs=1; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "compat_matrix.sh: unknown option $1" >&2; exit 2 ;;
    *) versions+=("$1"); shift ;;
  esac
done
[ ${#versions[@]} -gt 0 ] || versions=("${DEFAULT_VERSIONS[@]}")

compat=$ROOT/build/compat
logs=$compat/logs
mkdir -p "$logs" "$(dirname "$markdown")" "$(dirname "$json")" "$ROOT/.venvs"
[ "$fresh" = 1 ] && rm -f "$json"

now() { date +%s; }
elapsed() { echo $(( $(now) - $1 )); }

# step LOG NAME COMMAND...: runs COMMAND with its output in LOG, prints its result and seconds.
step() {
  local log=$1 name=$2; shift 2
  local start rc
  start=$(now)
  printf '\n===== %s: %s\n' "$name" "$*" >>"$log"
  "$@" >>"$log" 2>&1
  rc=$?
  printf '  %-14s %-6s %5ss\n' "$name" "$([ $rc = 0 ] && echo ok || echo FAILED)" "$(elapsed "$start")"
  return $rc
}

# The simulated driver, once, for the simulated-driver tests of every version.
start=$(now)
echo "simulated driver (tests/cpp/build/libtgc_simdriver.so, -j1):"
simlog=$logs/simdriver.log
: >"$simlog"
if step "$simlog" configure cmake -S tests/cpp -B tests/cpp/build &&
   step "$simlog" build cmake --build tests/cpp/build -j1 --target tgc_simdriver; then
  :
else
  echo "  the simulated driver did not build ($simlog); its tests will skip" >&2
fi

any_failed=0
for version in "${versions[@]}"; do
  echo
  echo "torch $version:"
  t0=$(now)
  log=$logs/torch-$version.log
  : >"$log"
  venv=$ROOT/.venvs/torch-$version
  py=$venv/bin/python
  cuda=null install=skipped build=skipped wheel=skipped cpp=skipped tests=skipped
  passed=0 failed=0 skipped=0 errors=0 error_line="" other_skips=""

  # Nothing compiled against another torch may be reused (setuptools skips an up-to-date .so).
  rm -rf build/temp.* build/lib.* build/bdist.* torch_green_contexts.egg-info \
    torch_green_contexts/_C*.so torch_green_contexts/_build_info.py
  rm -rf "$venv"

  if step "$log" venv "$BASE_PY" -m venv "$venv" &&
     step "$log" install "$py" -m pip install -q "torch==$version" setuptools wheel pytest hypothesis numpy; then
    install=ok
    cuda=$("$py" -c 'import json, torch; print(json.dumps(torch.version.cuda))' 2>>"$log" || echo null)
    installed=$("$py" -c 'import torch; print(torch.__version__)' 2>>"$log")
    echo "  torch $installed, CUDA ${cuda//\"/}"

    if step "$log" build "$py" -m pip install --no-build-isolation --no-deps -e .; then
      build=ok
      tests_out=$compat/pytest-$version.txt
      start=$(now)
      "$py" -m pytest tests -q -p no:cacheprovider -rfEs >"$tests_out" 2>&1
      rc=$?
      cat "$tests_out" >>"$log"
      summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed|skipped|errors?|deselected)' "$tests_out" | tail -n 1)
      [ -n "$summary" ] || summary=$(grep -E ' in [0-9.]+s' "$tests_out" | tail -n 1)
      count() { echo "$summary" | grep -oE "[0-9]+ $1" | grep -oE '[0-9]+' || echo 0; }
      # Skips for another reason than a missing GPU (optional packages, torch's own API).
      other_skips=$(grep -E '^SKIPPED ' "$tests_out" | grep -vE 'GPU' | sed 's/^SKIPPED //')
      passed=$(count passed); failed=$(count failed); skipped=$(count skipped); errors=$(count 'errors?')
      if [ $rc = 0 ] && [ "$failed" = 0 ] && [ "$errors" = 0 ] && [ "$passed" -gt 0 ]; then
        tests=ok
      else
        tests=FAILED
        error_line=$(grep -E '^(FAILED|ERROR) ' "$tests_out" | head -n 1)
      fi
      printf '  %-14s %-6s %5ss  (%s passed, %s failed, %s skipped, %s errors)\n' tests "$tests" \
        "$(elapsed "$start")" "$passed" "$failed" "$skipped" "$errors"
      rm -f "$tests_out"
    else
      build=FAILED
      error_line=$(grep -m 1 -E 'error:|Error:' "$log")
    fi

    wheeldir=$compat/wheels/torch-$version
    rm -rf "$wheeldir"
    if step "$log" wheel "$py" -m pip wheel -q --no-build-isolation --no-deps -w "$wheeldir" .; then
      wheel=ok
    else
      wheel=FAILED
    fi

    cppbuild=$compat/cpp/torch-$version
    rm -rf "$cppbuild"
    if PYTHON=$py BUILD=$cppbuild step "$log" cpp-example bash scripts/build_cpp_example.sh --no-run; then
      cpp=ok
    else
      cpp=FAILED
      [ -n "$error_line" ] || error_line=$(grep -m 1 -E 'error:|Error' "$log")
    fi
    rm -rf "$cppbuild"
  else
    install=FAILED
    error_line=$(grep -m 1 -E 'ERROR|error' "$log")
  fi

  seconds=$(elapsed "$t0")
  result=ok
  for part in "$install" "$build" "$wheel" "$tests" "$cpp"; do
    [ "$part" = ok ] || result=FAILED
  done
  [ "$result" = ok ] || any_failed=1
  echo "  torch $version: $result in ${seconds}s (log: ${log#$ROOT/})"

  [ "$keep_venvs" = 1 ] || rm -rf "$venv"

  # The row, merged into the JSON file (replacing an earlier row of this version).
  ROW_VERSION=$version ROW_CUDA=$cuda ROW_INSTALL=$install ROW_BUILD=$build ROW_WHEEL=$wheel \
  ROW_TESTS=$tests ROW_PASSED=$passed ROW_FAILED=$failed ROW_SKIPPED=$skipped ROW_ERRORS=$errors \
  ROW_OTHER_SKIPS=$other_skips ROW_CPP=$cpp ROW_SECONDS=$seconds ROW_RESULT=$result ROW_ERROR=$error_line \
  ROW_LOG=${log#$ROOT/} JSON=$json MARKDOWN=$markdown "$BASE_PY" - <<'EOF'
import json, os, platform, subprocess, time

e = os.environ
path = e["JSON"]
try:
    with open(path) as f:
        data = json.load(f)
except (OSError, ValueError):
    data = {"rows": []}

def version_key(v):
    return tuple(int(p) if p.isdigit() else p for p in v.split("."))

row = {
    "torch": e["ROW_VERSION"],
    "cuda": json.loads(e["ROW_CUDA"]) if e["ROW_CUDA"] not in ("", "null") else None,
    "install": e["ROW_INSTALL"],
    "build": e["ROW_BUILD"],
    "wheel": e["ROW_WHEEL"],
    "tests": e["ROW_TESTS"],
    "passed": int(e["ROW_PASSED"]),
    "failed": int(e["ROW_FAILED"]),
    "skipped": int(e["ROW_SKIPPED"]),
    "errors": int(e["ROW_ERRORS"]),
    "skips_not_for_gpu": [line for line in e["ROW_OTHER_SKIPS"].splitlines() if line],
    "cpp_example": e["ROW_CPP"],
    "seconds": int(e["ROW_SECONDS"]),
    "result": e["ROW_RESULT"],
    "first_error": e["ROW_ERROR"] or None,
    "log": e["ROW_LOG"],
    "date": time.strftime("%Y-%m-%d %H:%M:%S"),
}
rows = [r for r in data.get("rows", []) if r["torch"] != row["torch"]] + [row]
rows.sort(key=lambda r: version_key(r["torch"]))
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
row["commit"] = commit + ("+changes" if dirty else "")
data = {
    "machine": f"{platform.system()} {platform.machine()}, Python {platform.python_version()}, no GPU",
    "rows": rows,
}
with open(path, "w") as f:
    json.dump(data, f, indent=2)
    f.write("\n")

lines = [
    "| torch | CUDA | install | build (-e) | wheel | tests passed / failed / skipped | C++ example | seconds | result |",
    "|---|---|---|---|---|---|---|---:|---|",
]
for r in rows:
    tests = f"{r['passed']} / {r['failed'] + r['errors']} / {r['skipped']}" if r["tests"] != "skipped" else "not run"
    lines.append(
        f"| {r['torch']} | {r['cuda'] or '-'} | {r['install']} | {r['build']} | {r['wheel']} | {tests} "
        f"| {r['cpp_example']} | {r['seconds']} | {r['result']} |"
    )
with open(e["MARKDOWN"], "w") as f:
    f.write(f"Measured on {data['machine']}; tests: `pytest tests` (GPU tests skip).\n\n")
    f.write("\n".join(lines) + "\n")
    notes = [r for r in rows if r.get("skips_not_for_gpu")]
    if notes:
        f.write("\nSkips other than for want of a GPU (pytest's count in brackets):\n\n")
        for r in notes:
            f.write(f"- torch {r['torch']}: " + "; ".join(r["skips_not_for_gpu"]) + "\n")
EOF
done

echo
cat "$markdown"
echo
echo "JSON: $json"
exit $any_failed
