#!/usr/bin/env bash
# Builds grammar_fuzz (sanitizer build) and fuzzes the GBNF grammar engine (parser, matcher, token
# mask) for N seconds (default 60), seeded with grammars and texts they accept or reject, and a
# dictionary of GBNF syntax.
#   fuzz/run_grammar_fuzz.sh [seconds] [extra libFuzzer flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift || true
fuzz_build=$root/build-asan  # the sanitizer build (scripts/build.sh asan)
work=${HEARTH_FUZZ_WORK:-$fuzz_build/grammar-fuzz}
# scripts/fuzz.sh builds every target first and runs several of these at once.
[ "${HEARTH_FUZZ_PREBUILT:-0}" = 1 ] || "$root/scripts/build.sh" asan grammar_fuzz >/dev/null
mkdir -p "$work/corpus" "$work/artifacts"
seed() { printf '%s\0%s' "$1" "$2" >"$work/corpus/seed-$3"; }
json='root ::= ws value ws
value ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws ::= [ \t\n\r]*'
seed "$json" '{"a": [1, -2.5e3, "x\u00e9\n", true, null], "b": {}}' json
seed "$json" '[1, 2,, 3]' json-bad
seed 'root ::= "a"{2,3} [^a]+ (x | y)?
x ::= "日本" | "😀"
y ::= . # any' 'aa€x日本' repeat
seed 'root ::= ( "(" root ")" )* | [a-z]{0,5}' '((()))(abc' nested
seed 'root ::= a
a ::= b "x" | "y"
b ::= a' 'yx' left-recursion
cat > "$work/gbnf.dict" <<'DICT'
"::="
" ::= "
"root"
"root ::= "
"|"
"("
")"
"["
"]"
"[^"
"\""
"\\"
"\\x"
"\\u"
"\\U"
"."
"*"
"+"
"?"
"{"
"}"
"{2,3}"
"{0,}"
"#"
"\x0a"
"\x00"
"-"
"\xc3\xa9"
"\xe6\x97\xa5"
"\xf0\x9f\x98\x80"
DICT
exec "$fuzz_build/fuzz/grammar_fuzz" -max_total_time="$secs" -max_len=4096 -timeout=10 \
  -dict="$work/gbnf.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" \
  "$work/corpus"
