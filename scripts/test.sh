#!/usr/bin/env bash
# Builds (incrementally) and runs the whole test suite through ctest; exits with ctest's status.
# Usage: scripts/test.sh [PRESET] [extra ctest args]   PRESET = release (default) | debug | asan
set -uo pipefail
cd "$(dirname "$0")/.."
preset=release
case "${1:-}" in release|debug|asan) preset=$1; shift;; esac
dir=build; [ "$preset" = release ] || dir=build-$preset
if [ ! -f "$dir/build.ninja" ]; then
  cmake --preset "$preset" >/dev/null || exit 1
fi
cmake --build --preset "$preset" -- -j"$(nproc)" || exit 1
ctest --preset "$preset" -j"$(nproc)" "$@"
