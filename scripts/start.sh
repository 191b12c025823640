#!/usr/bin/env bash
# Sets up, builds and starts hearth. With no arguments it runs the tiny stories model from the
# test data; otherwise the arguments go to the `hearth` binary (e.g. `run -m MODEL -p TEXT`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release
if [ $# -eq 0 ]; then
  shared="${HEARTH_SHARED_DIR:-../shared}"
  set -- run -m "$shared/models/stories260K.gguf" -p "Once upon a time" -n 128 --temp 0.8 -v
fi
exec build/src/hearth "$@"
