#!/usr/bin/env bash
# Runs clang-tidy (the checks in .clang-tidy, every one an error) over every C++ source under src/,
# using the compile commands of the release build (build/, made by setup.sh or test.sh).
# Usage: scripts/tidy.sh [BUILD_DIR]     Exits non-zero when any check fires.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
[ -f "$dir/compile_commands.json" ] || { echo "tidy.sh: $dir/compile_commands.json missing: build first" >&2; exit 1; }
runner=$(command -v run-clang-tidy || command -v run-clang-tidy-14 || true)
[ -n "$runner" ] || { echo "tidy.sh: run-clang-tidy not found (Debian package clang-tidy)" >&2; exit 1; }
mapfile -t files < <(git ls-files 'src/*.cc')
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$runner" -quiet -p "$dir" -j "$(nproc)" "${files[@]}" >"$log" 2>&1; then
  grep -E "error:|warning:" "$log" | sort -u | head -n 100 >&2 || tail -n 60 "$log" >&2
  echo "tidy.sh: clang-tidy found problems in src/ (see above)" >&2
  exit 1
fi
echo "tidy.sh: clang-tidy clean over ${#files[@]} files in src/"
