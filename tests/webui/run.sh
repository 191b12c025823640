#!/usr/bin/env bash
# CTest entry: the web chat end to end in a real browser. Installs playwright-core (npm ci, from
# package-lock.json) and drives Debian's chromium against the hearth binary given as $1; the
# screenshots go to $2. Exit 77 (skip) without the test data, node/npm or chromium.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export HEARTH_BIN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
export HEARTH_WEBUI_ARTIFACTS="${2:-$here/artifacts}"
root="$(cd "$here/../.." && pwd)"
export HEARTH_SHARED="${HEARTH_SHARED_DIR:-$root/../shared}"
if [ ! -f "$HEARTH_SHARED/tokenizers/vocab-qwen3.gguf" ]; then
  echo "SKIP: test data not found at $HEARTH_SHARED (set HEARTH_SHARED_DIR)"
  exit 77
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node/npm not installed"
  exit 77
fi
export HEARTH_CHROMIUM="${HEARTH_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
if [ -z "$HEARTH_CHROMIUM" ]; then
  echo "SKIP: chromium not installed (scripts/setup.sh --tests installs Debian's chromium)"
  exit 77
fi
cd "$here"
if [ ! -d node_modules/playwright-core ]; then
  if ! npm ci --no-audit --no-fund --loglevel=error; then
    echo "SKIP: npm ci failed (no registry access?)"
    exit 77
  fi
fi
mkdir -p "$HEARTH_WEBUI_ARTIFACTS"
exec node --test --test-concurrency=1 e2e.test.mjs
