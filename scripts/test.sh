#!/usr/bin/env bash
# The whole test suite, from a fresh machine: install packages, build, run the unit tests,
# run them again under ASan/UBSan, and smoke-run the GGUF fuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests

echo "== release build + tests"
scripts/build.sh release
ctest --test-dir build --output-on-failure -j "$(nproc)"

echo "== ASan/UBSan build + tests"
scripts/build.sh asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" --timeout 900

if [ "${HEARTH_SKIP_FUZZ:-0}" != 1 ]; then
  echo "== fuzz smoke (libFuzzer, 30 s)"
  scripts/fuzz.sh 30
fi
