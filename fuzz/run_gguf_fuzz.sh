#!/usr/bin/env bash
# Builds gguf_reader_fuzz (sanitizer build), gathers seeds (writer-made ones from the test suite
# plus the GGUF files in ../shared) and fuzzes for N seconds (default 60).
#   fuzz/run_gguf_fuzz.sh [seconds] [extra libFuzzer flags...]
# Work files (corpus, crash artifacts) go to $HEARTH_FUZZ_WORK (default build-asan/gguf-fuzz).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift || true
shared=${HEARTH_SHARED_DIR:-$root/../shared}
fuzz_build=$root/build-asan  # the sanitizer build (scripts/build.sh asan)
test_build=${HEARTH_TEST_BUILD:-$root/build-gguf}
work=${HEARTH_FUZZ_WORK:-$fuzz_build/gguf-fuzz}

# scripts/fuzz.sh builds every target first and runs several of these at once.
[ "${HEARTH_FUZZ_PREBUILT:-0}" = 1 ] || "$root/scripts/build.sh" asan gguf_reader_fuzz >/dev/null

mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
# Writer-made seeds come from the test suite (Corpus.FuzzSeeds writes them when asked).
if [ ! -x "$test_build/tests/test_gguf" ]; then
  cmake -S "$root" -B "$test_build" -G Ninja >/dev/null
  cmake --build "$test_build" --target test_gguf
fi
HEARTH_GGUF_SEED_DIR="$work/seeds" "$test_build/tests/test_gguf" --gtest_filter=Corpus.FuzzSeeds >/dev/null
# Real files: the small models whole, the large vocabularies as 64 KiB prefixes (they fail
# mid-array but exercise the string paths; whole they would slow every execution down).
for f in "$shared"/models/stories260K.gguf "$shared"/models/synthetic/qwen3-Q4_K.gguf \
         "$shared"/models/synthetic/llama-untied-Q8_0.gguf \
         "$shared"/models/synthetic-arch/{qwen3moe,gemma3,qwen35,qwen35moe,lfm2}-Q4_K.gguf; do
  [ -f "$f" ] && cp "$f" "$work/seeds/$(basename "$f" .gguf).bin"
done
for f in "$shared"/tokenizers/*.gguf; do
  [ -f "$f" ] && head -c 65536 "$f" > "$work/seeds/$(basename "$f" .gguf).prefix.bin"
done

exec "$fuzz_build/fuzz/gguf_reader_fuzz" -max_total_time="$secs" -dict="$root/fuzz/gguf.dict" \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" "$work/corpus" "$work/seeds"
