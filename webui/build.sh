#!/usr/bin/env bash
# Builds the web chat into $1 (CMake calls this at build time): installs the pinned npm packages
# from package-lock.json when they are missing or older than the lockfile, then bundles them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: build.sh OUT_DIR}"
cd "$here"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  if ! npm ci --no-audit --no-fund --loglevel=error; then
    echo "webui: npm ci failed (no access to the npm registry?). Build without the web chat:" >&2
    echo "webui:   cmake -DHEARTH_WEBUI=OFF <build dir>" >&2
    exit 1
  fi
fi
node build.mjs "$out"
