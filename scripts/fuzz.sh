#!/usr/bin/env bash
# Runs every libFuzzer target for N seconds each (default 60): `scripts/fuzz.sh [seconds]`.
# The targets live in the sanitizer build (scripts/build.sh asan, build-asan/fuzz/); they are
# built first, then each fuzz/run_*_fuzz.sh seeds and runs its target, as many at once as the
# machine has cores (each fuzzer is one process), so the whole smoke takes about
# N × ceil(targets / cores) seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
export HEARTH_TEST_BUILD="${HEARTH_TEST_BUILD:-$PWD/build}"
runners=(fuzz/run_*_fuzz.sh)
targets=()
for runner in "${runners[@]}"; do
  targets+=("$(sed -n 's/.*scripts\/build.sh" asan \([a-z_]*\).*/\1/p' "$runner")")
done
scripts/build.sh asan "${targets[@]}" >/dev/null
export HEARTH_FUZZ_PREBUILT=1
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# Runs one fuzzer in the background, its output to a log and its exit status to a file.
start() {
  local name; name=$(basename "$1" .sh)
  (set +e; bash "$1" "$secs" >"$logs/$name.log" 2>&1; echo $? >"$logs/$name.status") &
}
report() {  # the summary lines of one finished fuzzer; non-zero when it failed
  local name; name=$(basename "$1" .sh)
  echo "== $1 ($secs s)"
  grep -E "^(INFO: (Running|Loaded)|Done|stat::|==[0-9]+==|SUMMARY)|ERROR|BINGO" \
    "$logs/$name.log" || true
  local status; status=$(cat "$logs/$name.status")
  if [ "$status" -ne 0 ]; then
    tail -40 "$logs/$name.log" >&2
    echo "fuzz: $1 failed (exit $status)" >&2
    return 1
  fi
}
width=$(nproc)
failed=0
for ((i = 0; i < ${#runners[@]}; i += width)); do
  batch=("${runners[@]:i:width}")
  for runner in "${batch[@]}"; do start "$runner"; done
  wait
  for runner in "${batch[@]}"; do report "$runner" || failed=1; done
done
exit "$failed"
