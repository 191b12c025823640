#!/usr/bin/env bash
# The whole test suite, from a fresh machine: install packages, build, run every test in the
# Release build, run the unit tests again under ASan/UBSan, and smoke-run every fuzzer. The
# sanitizer build (clang) also holds the fuzz targets, so there are two builds, not three; the
# integration tests (label "integration": whole servers driven by node clients, chromium,
# HAProxy) run in the Release build only. Prints how long each part took.
set -euo pipefail
cd "$(dirname "$0")/.."
times=()
# Runs a part of the suite and records its wall time.
part() {
  local name=$1
  shift
  echo "== $name"
  local t0=$SECONDS
  "$@"
  times+=("$(printf '%-16s %5d s' "$name" $((SECONDS - t0)))")
}
sanitized_unit_tests() {
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$(nproc)" --timeout 900 -LE integration
}

part setup scripts/setup.sh --tests
part "release build" scripts/build.sh release
part "release tests" ctest --test-dir build --output-on-failure -j "$(nproc)"
part "sanitizer build" scripts/build.sh asan
part "sanitizer tests" sanitized_unit_tests
if [ "${HEARTH_SKIP_FUZZ:-0}" != 1 ]; then
  part "fuzz smoke" scripts/fuzz.sh 30
fi
echo "== times (total $SECONDS s)"
printf '%s\n' "${times[@]}"
