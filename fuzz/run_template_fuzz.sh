#!/usr/bin/env bash
# Builds template_fuzz (sanitizer build) and fuzzes the chat-template engine for N seconds (default
# 60), seeded with the real templates of ../shared/templates (each alone and with each case's
# context) and a dictionary of Jinja syntax.
#   fuzz/run_template_fuzz.sh [seconds] [extra libFuzzer flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift || true
shared=${HEARTH_SHARED_DIR:-$root/../shared}
fuzz_build=$root/build-asan  # the sanitizer build (scripts/build.sh asan)
work=${HEARTH_FUZZ_WORK:-$fuzz_build/template-fuzz}
# scripts/fuzz.sh builds every target first and runs several of these at once.
[ "${HEARTH_FUZZ_PREBUILT:-0}" = 1 ] || "$root/scripts/build.sh" asan template_fuzz >/dev/null
mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
if [ -d "$shared/templates/templates" ]; then
  python3 - "$shared/templates" "$work/seeds" <<'PY'
import json, os, sys
src, out = sys.argv[1], sys.argv[2]
cases = json.load(open(os.path.join(src, "cases.json")))["cases"]
for name in sorted(os.listdir(os.path.join(src, "templates"))):
    t = open(os.path.join(src, "templates", name), "rb").read()
    open(os.path.join(out, name + ".seed"), "wb").write(t)
    for c in cases[:6]:
        ctx = {"messages": c["messages"], "tools": c.get("tools"), "add_generation_prompt": c["add_generation_prompt"],
               "bos_token": "<s>", "eos_token": "</s>", "kwargs": c.get("kwargs", {})}
        open(os.path.join(out, name + "." + c["name"] + ".seed"), "wb").write(t + b"\0" + json.dumps(ctx).encode())
PY
fi
cat > "$work/jinja.dict" <<'DICT'
"{{"
"}}"
"{%"
"%}"
"{%-"
"-%}"
"{#"
"#}"
" if "
" elif "
" else "
" endif "
" for "
" in "
" endfor "
" set "
" endset "
" macro "
" endmacro "
" call "
" endcall "
" filter "
" endfilter "
" break "
" continue "
" raw "
" endraw "
" is "
" not "
" and "
" or "
"loop.index0"
"loop.last"
"namespace("
"messages"
"|tojson"
"|selectattr("
"|map(attribute="
"|join("
"|trim"
"|length"
"|default("
".strip("
".split("
"[::-1]"
"~"
"**"
"//"
"raise_exception("
"strftime_now("
"range("
DICT
exec "$fuzz_build/fuzz/template_fuzz" -max_total_time="$secs" -max_len=8192 -timeout=10 \
  -dict="$work/jinja.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" \
  "$work/corpus" "$work/seeds"
