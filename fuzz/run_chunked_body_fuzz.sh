#!/usr/bin/env bash
# Builds chunked_body_fuzz (sanitizer build) and fuzzes the chunked request-body decoder for N
# seconds (default 60), seeded with valid bodies (extensions, trailers) and broken ones.
#   fuzz/run_chunked_body_fuzz.sh [seconds] [extra libFuzzer flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift || true
fuzz_build=$root/build-asan  # the sanitizer build (scripts/build.sh asan)
work=${HEARTH_FUZZ_WORK:-$fuzz_build/chunked-body-fuzz}
# scripts/fuzz.sh builds every target first and runs several of these at once.
[ "${HEARTH_FUZZ_PREBUILT:-0}" = 1 ] || "$root/scripts/build.sh" asan chunked_body_fuzz >/dev/null
mkdir -p "$work/corpus" "$work/artifacts"
printf '5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Sum: 1\r\n\r\n' >"$work/corpus/seed-trailer"
printf '3\r\nabc\r\n0\r\n\r\n' >"$work/corpus/seed-plain"
printf 'zz\r\nabc\r\n0\r\n\r\n' >"$work/corpus/seed-bad-size"
printf '10000\r\nabc' >"$work/corpus/seed-large"
exec "$fuzz_build/fuzz/chunked_body_fuzz" -max_total_time="$secs" -max_len=8192 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" "$work/corpus"
