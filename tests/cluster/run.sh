#!/usr/bin/env bash
# CTest entry: 3 hearth replicas behind HAProxy (deploy/haproxy/hearth.cfg) replaying 12
# conversations x 6 turns: round-robin (the baseline), affinity with a shared cache folder and a
# replica killed mid-replay, round-robin with the shared folder; the hearth binary is $1.
# Exit 77 (skip) without the test data, node or haproxy.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export HEARTH_BIN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
root="$(cd "$here/../.." && pwd)"
export HEARTH_ROOT="$root"
export HEARTH_SHARED="${HEARTH_SHARED_DIR:-$root/../shared}"
if [ ! -f "$HEARTH_SHARED/models/stories260K.gguf" ]; then
  echo "SKIP: test data not found at $HEARTH_SHARED (set HEARTH_SHARED_DIR)"
  exit 77
fi
command -v node >/dev/null || { echo "SKIP: node not installed"; exit 77; }
command -v haproxy >/dev/null || { echo "SKIP: haproxy not installed (scripts/setup.sh --tests)"; exit 77; }
exec node --test "$here/cluster.test.mjs"
