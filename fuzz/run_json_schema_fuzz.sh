#!/usr/bin/env bash
# Builds json_schema_fuzz (sanitizer build) and fuzzes the JSON Schema → GBNF converter for N
# seconds (default 60), seeded with schemas using every supported keyword and a dictionary of them.
#   fuzz/run_json_schema_fuzz.sh [seconds] [extra libFuzzer flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift || true
fuzz_build=$root/build-asan  # the sanitizer build (scripts/build.sh asan)
work=${HEARTH_FUZZ_WORK:-$fuzz_build/json-schema-fuzz}
# scripts/fuzz.sh builds every target first and runs several of these at once.
[ "${HEARTH_FUZZ_PREBUILT:-0}" = 1 ] || "$root/scripts/build.sh" asan json_schema_fuzz >/dev/null
mkdir -p "$work/corpus" "$work/artifacts"
seed() { printf '%s' "$1" >"$work/corpus/seed-$2"; }
seed '{"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":20},"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3}},"required":["name"],"additionalProperties":false}' object
seed '{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"}' recursive
seed '{"anyOf":[{"type":"string","pattern":"^[A-Z]{2}-\\d{3}(x|y)*$"},{"type":["null","boolean"]},{"enum":[1,"a",{"k":[null]}]},{"const":-2.5}]}' anyof
seed '{"allOf":[{"properties":{"a":{"type":"number","exclusiveMinimum":0}},"required":["a"]},{"properties":{"b":{"format":"date-time"}},"additionalProperties":{"type":"integer","exclusiveMaximum":-7}}]}' allof
seed '{"type":"array","prefixItems":[{"type":"string","format":"uuid"},{"type":"integer","minimum":-1000000,"maximum":99999999999}],"items":false,"minItems":1}' tuple
seed '{"definitions":{"a":{"items":{"$ref":"#/definitions/b"}},"b":{"oneOf":[{"$ref":"#/definitions/a"},{"type":"null"}]}},"$ref":"#/definitions/a"}' mutual
cat > "$work/schema.dict" <<'DICT'
"\"type\""
"\"object\""
"\"array\""
"\"string\""
"\"integer\""
"\"number\""
"\"boolean\""
"\"null\""
"\"properties\""
"\"required\""
"\"additionalProperties\""
"\"items\""
"\"prefixItems\""
"\"additionalItems\""
"\"minItems\""
"\"maxItems\""
"\"minLength\""
"\"maxLength\""
"\"pattern\""
"\"format\""
"\"date-time\""
"\"uuid\""
"\"minimum\""
"\"maximum\""
"\"exclusiveMinimum\""
"\"exclusiveMaximum\""
"\"enum\""
"\"const\""
"\"anyOf\""
"\"oneOf\""
"\"allOf\""
"\"$ref\""
"\"#/$defs/"
"\"$defs\""
"\"definitions\""
"\"#\""
"(?:"
"[^"
"{1,3}"
"\\\\d"
"\\\\u00e9"
DICT
exec "$fuzz_build/fuzz/json_schema_fuzz" -max_total_time="$secs" -max_len=4096 -timeout=10 \
  -dict="$work/schema.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" \
  "$work/corpus"
