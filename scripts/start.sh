#!/usr/bin/env bash
# Sets up, builds and starts hearth. With no arguments it starts `hearth serve` on the default
# model ($HEARTH_MODEL, else a small chat model pulled on first use); otherwise the arguments go
# to the `hearth` binary (e.g. `serve -m MODEL`, `run -m MODEL -p TEXT`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release hearth  # serving needs the binary only, not the tests and benchmarks
if [ $# -eq 0 ]; then
  set -- serve
fi
exec build/src/hearth "$@"
