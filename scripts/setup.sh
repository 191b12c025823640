#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages hearth's build needs (with `--tests`, also those of its
# tests). Idempotent: installs only what is missing, and runs `apt-get update` only when
# something is.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config           # build
  libfmt-dev nlohmann-json3-dev libcli11-dev # libraries
  libpcre2-dev                               # Unicode regex (pre-tokenizers)
  libutf8proc-dev                            # Unicode normalization (WordPiece)
  libcpp-httplib-dev libssl-dev              # HTTP server, `hearth pull`, SHA-256
  libxxhash-dev libzstd-dev                  # prefix-cache keys, disk tier
  googletest libgtest-dev libgmock-dev       # unit tests
  clang libclang-rt-14-dev                   # libFuzzer target
)
# `--tests`: also what only the test suite needs (scripts/test.sh passes it; serving does not).
if [ "${1:-}" = "--tests" ]; then
  packages+=(chromium)  # the web chat's end-to-end test (driven by playwright-core)
  packages+=(haproxy)   # the replicas test (tests/cluster), with deploy/haproxy/hearth.cfg
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Server integration tests drive hearth with the official `openai` npm client; the web chat is
# bundled from npm packages at build time.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
