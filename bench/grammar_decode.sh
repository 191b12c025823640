#!/usr/bin/env bash
# Decode speed with and without a JSON Schema grammar (structured output's cost), measured in
# one run: `hearth run` on the same model, prompt and seeds, constrained and free runs
# alternated so both see the same machine state. Prints each pair's tok/s (decode after the
# first token) and the median cost.
#
#   bench/grammar_decode.sh HEARTH MODEL [SEEDS] [N_PREDICT]
#
# The schema below makes a reply long (at least 8 records), so the constrained runs decode as
# many tokens as the free ones and the per-request warm-up (each grammar state's first mask)
# is spread over a realistic reply.
set -euo pipefail
bin="$1"
model="$2"
seeds="${3:-6}"
n="${4:-192}"
schema='{"type":"object","required":["items"],"properties":{"items":{"type":"array","minItems":8,
"items":{"type":"object","required":["name","age","tags"],"additionalProperties":false,
"properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0},
"tags":{"type":"array","minItems":2,"items":{"type":"string"}}}}}}}'

rate() {  # tok/s after the first token, from `hearth run -v`
  sed -n 's/.*(\([0-9.]*\) tok\/s after the first).*/\1/p'
}

costs=()
printf '%6s %12s %12s %8s\n' seed "free tok/s" "json tok/s" cost
for ((s = 1; s <= seeds; s++)); do
  free=$("$bin" run -m "$model" -p "Write JSON:" -n "$n" --temp 1 --seed "$s" -t 2 -v \
    2>&1 >/dev/null | rate)
  json=$("$bin" run -m "$model" -p "Write JSON:" -n "$n" --temp 1 --seed "$s" -t 2 -v \
    --json-schema "$schema" 2>&1 >/dev/null | rate)
  cost=$(awk -v f="$free" -v j="$json" 'BEGIN { printf "%.1f", (1 - j / f) * 100 }')
  costs+=("$cost")
  printf '%6d %12s %12s %7s%%\n' "$s" "$free" "$json" "$cost"
done
median=$(printf '%s\n' "${costs[@]}" | sort -g | awk '{ a[NR] = $1 } END {
  print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
echo "median cost: ${median}%"
