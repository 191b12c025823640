#!/usr/bin/env bash
# Builds tool_call_fuzz (sanitizer build) and fuzzes the tool-call parsers (every format) for N
# seconds (default 60), seeded with each format's calls, and a dictionary of the formats' markers.
#   fuzz/run_tool_call_fuzz.sh [seconds] [extra libFuzzer flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift || true
fuzz_build=$root/build-asan  # the sanitizer build (scripts/build.sh asan)
work=${HEARTH_FUZZ_WORK:-$fuzz_build/tool-call-fuzz}
# scripts/fuzz.sh builds every target first and runs several of these at once.
[ "${HEARTH_FUZZ_PREBUILT:-0}" = 1 ] || "$root/scripts/build.sh" asan tool_call_fuzz >/dev/null
mkdir -p "$work/corpus" "$work/artifacts"
# seed FORMAT-INDEX NAME TEXT: the format byte (chat::ToolFormat order), a split seed, the reply
seed() { printf "\\x$(printf %02x "$1")\\x05%s" "$3" >"$work/corpus/seed-$2"; }
args='{"n": 1, "s": "x"}'
seed 1 hermes "Sure.<tool_call>
{\"name\": \"f\", \"arguments\": $args}
</tool_call>"
seed 2 coder '<tool_call>
<function=f>
<parameter=n>
1
</parameter>
</function>
</tool_call>'
seed 3 llama3 "{\"name\": \"f\", \"parameters\": $args}"
seed 4 mistral "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": $args, \"id\": \"abcdefghi\"}]"
seed 5 deepseek "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f
\`\`\`json
$args
\`\`\`<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
seed 6 command-r "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"f\", \"parameters\": $args}]<|END_ACTION|>"
seed 7 functionary ">>>f
$args"
seed 8 harmony "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>$args<|call|>"
cat > "$work/tools.dict" <<'DICT'
"<tool_call>"
"</tool_call>"
"<function="
"</function>"
"<parameter="
"</parameter>"
"<|python_tag|>"
"[TOOL_CALLS]"
"[ARGS]"
"<\xef\xbd\x9ctool\xe2\x96\x81calls\xe2\x96\x81begin\xef\xbd\x9c>"
"<\xef\xbd\x9ctool\xe2\x96\x81call\xe2\x96\x81begin\xef\xbd\x9c>"
"<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>"
"<\xef\xbd\x9ctool\xe2\x96\x81call\xe2\x96\x81end\xef\xbd\x9c>"
"<|START_ACTION|>"
"<|END_ACTION|>"
">>>"
"<|channel|>"
"<|message|>"
"<|end|>"
"<|start|>"
" to=functions."
"{\"name\": "
"\"arguments\": "
"\"parameters\": "
DICT
exec "$fuzz_build/fuzz/tool_call_fuzz" -max_total_time="$secs" -max_len=2048 -timeout=10 \
  -dict="$work/tools.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" \
  "$work/corpus"
