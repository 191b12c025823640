#!/usr/bin/env bash
# Builds tokenizer_fuzz (sanitizer build) and fuzzes it for N seconds (default 60) with the Qwen3
# and Llama 3 vocabularies from ../shared (skips when they are absent).
#   fuzz/run_tokenizer_fuzz.sh [seconds] [extra libFuzzer flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift || true
shared=${HEARTH_SHARED_DIR:-$root/../shared}
fuzz_build=$root/build-asan  # the sanitizer build (scripts/build.sh asan)
work=${HEARTH_FUZZ_WORK:-$fuzz_build/tokenizer-fuzz}
if [ ! -f "$shared/tokenizers/vocab-qwen3.gguf" ]; then
  echo "SKIP: tokenizer fuzzing needs $shared/tokenizers (expected ../shared beside the project root)"
  exit 0
fi
# scripts/fuzz.sh builds every target first and runs several of these at once.
[ "${HEARTH_FUZZ_PREBUILT:-0}" = 1 ] || "$root/scripts/build.sh" asan tokenizer_fuzz >/dev/null
mkdir -p "$work/corpus" "$work/artifacts"
export HEARTH_SHARED_DIR="$shared"
exec "$fuzz_build/fuzz/tokenizer_fuzz" -max_total_time="$secs" -max_len=512 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" "$work/corpus"
