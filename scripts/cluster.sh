#!/usr/bin/env bash
# Starts N `hearth serve` replicas sharing one cache folder behind HAProxy with conversation
# affinity (deploy/haproxy/hearth.cfg), on this machine, to try serving more users:
#   scripts/cluster.sh [-n 3] [-p 8080] [-d CACHE_DIR] -- SERVE ARGS (e.g. -m model.gguf -t 2)
# The load balancer listens on 127.0.0.1:PORT and replica i on PORT+i. Ctrl-C (or SIGTERM)
# drains the replicas (their warm blocks reach the shared folder) and stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
n=3 port=8080 dir="" bin="${HEARTH_BIN:-build/src/hearth}"
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n="$2"; shift 2 ;;
    -p) port="$2"; shift 2 ;;
    -d) dir="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [-n N] [-p PORT] [-d CACHE_DIR] -- SERVE ARGS" >&2; exit 2 ;;
  esac
done
command -v haproxy >/dev/null || { echo "cluster: haproxy not installed (apt-get install haproxy)" >&2; exit 1; }
[ -x "$bin" ] || { echo "cluster: $bin not built (scripts/build.sh release hearth)" >&2; exit 1; }
dir="${dir:-$(mktemp -d -t hearth-cache-XXXXXX)}"
mkdir -p "$dir"
run="$(mktemp -d -t hearth-cluster-XXXXXX)"
pids=()
stop() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait || true
  rm -rf "$run"
}
trap stop INT TERM EXIT
cfg="$run/haproxy.cfg"
cp deploy/haproxy/hearth.cfg "$cfg"
for i in $(seq 1 "$n"); do
  "$bin" serve --port $((port + i)) --cache-dir "$dir" --cache-shared "$@" 2> "$run/r$i.log" &
  pids+=($!)
  echo "  server r$i 127.0.0.1:$((port + i))" >> "$cfg"
done
HEARTH_LB_ADDR="127.0.0.1:$port" haproxy -f "$cfg" -db &
lb=$!
pids+=("$lb")
echo "cluster: $n replicas on ports $((port + 1))-$((port + n)), cache $dir; load balancer on http://127.0.0.1:$port/ (logs in $run)"
# Runs until the load balancer exits or a signal comes; a replica that dies is HAProxy's
# business (its conversations move to the others).
wait "$lb" || true
stop
