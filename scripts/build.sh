#!/usr/bin/env bash
# Configures and builds one flavour: `scripts/build.sh [release|asan|fuzz] [TARGET...]` → build/,
# build-asan/, build-fuzz/; every target unless some are named. Warnings are errors.
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
shift || true
jobs="$(nproc)"
case "$flavour" in
  release) dir=build; args=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) dir=build-asan; args=(-DCMAKE_BUILD_TYPE=Debug -DHEARTH_SANITIZE=ON) ;;
  fuzz) dir=build-fuzz; args=(-DCMAKE_BUILD_TYPE=Debug -DHEARTH_FUZZ=ON -DHEARTH_BUILD_TESTS=OFF
                              -DCMAKE_CXX_COMPILER=clang++) ;;
  *) echo "usage: $0 [release|asan|fuzz]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -G Ninja -DHEARTH_WERROR=ON "${args[@]}" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$dir" -j "$jobs" "${targets[@]}"
