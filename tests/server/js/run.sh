#!/usr/bin/env bash
# CTest entry: installs the openai client and the ajv JSON Schema validator (npm ci, from
# package-lock.json) and runs the node integration tests against the hearth binary given as $1.
# Exit 77 (skip) without the model or without npm/registry access.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export HEARTH_BIN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
root="$(cd "$here/../../.." && pwd)"
export HEARTH_TEST_MODEL="${HEARTH_SHARED_DIR:-$root/../shared}/models/stories260K.gguf"
if [ ! -f "$HEARTH_TEST_MODEL" ]; then
  echo "SKIP: test model not found at $HEARTH_TEST_MODEL (set HEARTH_SHARED_DIR)"
  exit 77
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node/npm not installed"
  exit 77
fi
cd "$here"
if [ ! -d node_modules/openai ] || [ ! -d node_modules/ajv ]; then
  if ! npm ci --no-audit --no-fund --loglevel=error; then
    echo "SKIP: npm ci failed (no registry access?)"
    exit 77
  fi
fi
exec node --test --test-concurrency=1 server.test.mjs structured.test.mjs tools.test.mjs
