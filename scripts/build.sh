#!/usr/bin/env bash
# Configures and builds one flavour: `scripts/build.sh [release|asan] [TARGET...]` → build/ or
# build-asan/; every target unless some are named. Warnings are errors.
#   release: Release (-O3; the unit tests' own files at -O0 and the CLI's at -O1: they compile
#            faster and spend their time in the library code).
#   asan:    clang, ASan + UBSan + libFuzzer's instrumentation at -O1 with line tables (asserts
#            on): the unit tests under the sanitizers and the fuzz targets (fuzz/), one build
#            (no benchmarks: the Release build compiles those). The tests' and the CLI's own
#            files at -O0 without the fuzzers' coverage (CMakeLists.txt, hearth_test_code).
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
shift || true
jobs="$(nproc)"
case "$flavour" in
  release) dir=build; args=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) dir=build-asan; args=(-DCMAKE_BUILD_TYPE=Debug -DHEARTH_SANITIZE=ON -DHEARTH_BUILD_BENCH=OFF
                              -DCMAKE_CXX_COMPILER=clang++
                              "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only") ;;
  *) echo "usage: $0 [release|asan] [TARGET...]" >&2; exit 2 ;;
esac
# A folder configured with another compiler (build-asan/ was GCC's before) starts afresh.
if [ -f "$dir/CMakeCache.txt" ] && [ "$flavour" = asan ] &&
   ! grep -q '^CMAKE_CXX_COMPILER:.*clang++' "$dir/CMakeCache.txt"; then
  rm -rf "$dir"
fi
cmake -S . -B "$dir" -G Ninja -DHEARTH_WERROR=ON "${args[@]}" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$dir" -j "$jobs" "${targets[@]}"
