#!/usr/bin/env bash
# Builds (incrementally) and runs the whole test suite through ctest; exits with ctest's status.
# Usage: scripts/test.sh [PRESET] [extra ctest args]
#   PRESET = release (default) | debug | asan (g++ ASan + UBSan) | tsan (clang ThreadSanitizer and
#   -Wthread-safety -Werror in one build)
# The slow end-to-end suites that drive real peers (a real Slurm, Prometheus, headless Chromium,
# PyTorch, the stress test, packaging) run once, in the release build: the sanitizer presets skip
# them (their names/labels are listed in `slow` below), so CI builds each sanitizer once and
# spends its time on the code that is ours.
set -uo pipefail
cd "$(dirname "$0")/.."
preset=release
case "${1:-}" in release|debug|asan|tsan) preset=$1; shift;; esac
dir=build; [ "$preset" = release ] || dir=build-$preset
if [ ! -f "$dir/build.ninja" ]; then
  cmake --preset "$preset" >/dev/null || exit 1
fi
cmake --build --preset "$preset" -- -j"$(nproc)" || exit 1
extra=()
case "$preset" in
  asan|tsan)
    slow='dashboard_browser|Slurm|Prometheus|Alertmanager|Torch|Stress|Package'
    extra=(-E "$slow" -LE 'browser|package|slow') ;;
esac
ctest --preset "$preset" -j"$(nproc)" "${extra[@]}" "$@"
