#!/usr/bin/env bash
# Runs every libFuzzer target for N seconds each (default 60): `scripts/fuzz.sh [seconds]`.
# Each fuzz/run_*_fuzz.sh builds its target with clang (build-fuzz/) and seeds it.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
export HEARTH_TEST_BUILD="${HEARTH_TEST_BUILD:-$PWD/build}"
for runner in fuzz/run_*_fuzz.sh; do
  echo "== $runner ($secs s)"
  bash "$runner" "$secs" 2>&1 | grep -E "^(INFO: (Running|Loaded)|Done|stat::|==[0-9]+==|SUMMARY)|ERROR|BINGO" || true
  status=${PIPESTATUS[0]}
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $runner failed (exit $status)" >&2
    exit "$status"
  fi
done
