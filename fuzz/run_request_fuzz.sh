#!/usr/bin/env bash
# Builds request_fuzz (sanitizer build) and fuzzes the server's request parser for N seconds
# (default 60), seeded with valid chat / completions / llama-server bodies.
#   fuzz/run_request_fuzz.sh [seconds] [extra libFuzzer flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift || true
fuzz_build=$root/build-asan  # the sanitizer build (scripts/build.sh asan)
work=${HEARTH_FUZZ_WORK:-$fuzz_build/request-fuzz}
# scripts/fuzz.sh builds every target first and runs several of these at once.
[ "${HEARTH_FUZZ_PREBUILT:-0}" = 1 ] || "$root/scripts/build.sh" asan request_fuzz >/dev/null
mkdir -p "$work/corpus" "$work/artifacts"
seed() { printf '%s%s' "$1" "$2" >"$work/corpus/seed-$3"; }
seed '0' '{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":5,"temperature":0.5,"stop":["a","b"],"logprobs":true,"top_logprobs":2,"truncation":"auto","reasoning_format":"deepseek","chat_template_kwargs":{"x":1}}' chat
seed '1' '{"prompt":[1,2,3],"max_tokens":3,"echo":true,"logprobs":2,"seed":1,"n":1}' completions
seed '2' '{"prompt":"Once","n_predict":-1,"top_k":40,"top_p":0.9,"min_p":0.05,"repeat_penalty":1.1,"seed":-1,"n_probs":3,"cache_prompt":true,"id_slot":0}' llama
exec "$fuzz_build/fuzz/request_fuzz" -max_total_time="$secs" -max_len=2048 \
  -dict="$root/fuzz/request.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" \
  "$work/corpus"
