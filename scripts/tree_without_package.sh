#!/usr/bin/env bash
# Copies the checkout (run from its root) into DEST without the torch_green_contexts/ folder, so
# that tests run there import an installed package: with git, the tracked files and the untracked
# ones git does not ignore; without git (a copy of the tree), everything less the build outputs.
#   bash scripts/tree_without_package.sh DEST
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ $# -eq 1 ] || { sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
mkdir -p "$1"
if git rev-parse --git-dir >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard | grep -zv '^torch_green_contexts/' \
    | tar --null -T - -cf - | tar -xf - -C "$1"
else
  tar --exclude=./torch_green_contexts --exclude=./.git --exclude=./build --exclude=./dist --exclude=./.venvs \
    --exclude=./gpu-logs --exclude='*.so' -cf - . | tar -xf - -C "$1"
fi
