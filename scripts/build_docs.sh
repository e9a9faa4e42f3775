#!/usr/bin/env bash
# Builds the documentation in docs/ as HTML into docs/_build/html (OUT= to change), with Sphinx,
# warnings as errors. Installs Sphinx and MyST-Parser (docs/requirements.txt) with pip when the
# interpreter lacks them. The API reference is generated from the docstrings, so the package
# must import: build the extension first (pip install --no-build-isolation --no-deps -e .).
#   PYTHON=python3 bash scripts/build_docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${OUT:-docs/_build/html}

if ! $PY -c 'import sphinx, myst_parser' 2>/dev/null; then
  $PY -m pip install -q -r docs/requirements.txt
fi
if ! $PY -c 'import torch_green_contexts' 2>/dev/null; then
  echo "build_docs.sh: torch_green_contexts does not import with $PY; build it first:" >&2
  echo "  $PY -m pip install --no-build-isolation --no-deps -e ." >&2
  exit 1
fi
$PY -m sphinx -W --keep-going -q -b html docs "$OUT"
# Links to the README, results files and figures open as pages or in the browser (docs/conf.py),
# never as downloads.
if grep -rlE '<a [^>]*class="[^"]*download' "$OUT" --include='*.html' >/dev/null; then
  echo "build_docs.sh: download links in $(grep -rlE '<a [^>]*class="[^"]*download' "$OUT" --include='*.html' | tr '\n' ' ')" >&2
  exit 1
fi
echo "documentation: $OUT/index.html"
