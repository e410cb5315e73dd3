#!/usr/bin/env bash
# Records over gRPC against the link (issue 47, section 2): one client reading
# records from a daemon whose cache holds them all (so the disk is out of it),
# against one raw TCP stream over the same link in the same run
# (tests/bench/loopback_tcp.py, the iperf-like bound). Each daemon is read
# once first (its cache filled from disk), then three runs of each; prints
# every run's bytes/s.
#   - unshaped: gRPC on a Unix socket and over TLS on loopback TCP;
#   - with RATES (needs root): in a network namespace of its own whose loopback
#     `tc tbf` shapes to each rate (as tests/bench/lan_shaped.sh's links), gRPC
#     over plain TCP and over TLS, each from its own daemon.
#   tests/bench/grpc_records.sh [BUILD_DIR] [SECONDS] [RATES, e.g. "10gbit 25gbit"]
set -euo pipefail
build=${1:-build}
seconds=${2:-4}
rates=${3:-}
here=$(dirname "$0")
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-grpc-records.XXXXXX")
ns=warp-grpc-$$
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
bash "$here/../testing/make_test_certificates.sh" "$work" > /dev/null 2>&1
"$build/bin/computed" --log-level warn synth --quiet --arch deepseek_v3 --preset k2-slice \
  --size 1500M "$work/m.warp" | tail -1

serve() {  # NAME [PREFIX...] -- EXPERTD ARGS...: a daemon; its pid in $pids, its log in NAME.out
  local name=$1; shift
  local prefix=()
  while [[ $1 != -- ]]; do prefix+=("$1"); shift; done
  shift
  "${prefix[@]}" "$build/bin/expertd" --log-level warn serve --model "$work/m.warp" --budget 1G \
    "$@" > "$work/$name.out" &
  pids+=($!)
  local want=$(grep -o -- '--listen' <<< "$*" | wc -l)
  for _ in $(seq 100); do
    [[ $(grep -c '^listening' "$work/$name.out" || true) == "$want" ]] && return
    sleep 0.1
  done
  echo "grpc_records.sh: expertd $name did not start:" >&2; cat "$work/$name.out" >&2; exit 1
}
load() {  # [PREFIX...] -- ADDRESS PID [daemon_load ARGS...]: one line of bytes/s
  local prefix=()
  while [[ $1 != -- ]]; do prefix+=("$1"); shift; done
  shift
  local address=$1 pid=$2; shift 2
  "${prefix[@]}" "$build/bench/daemon_load" "$work/m.warp" "$address" --pid "$pid" --clients 1 \
    --seconds "${load_seconds:-$seconds}" --keys-per-read 8 "$@" | head -1
}
warm() {  # the same as load, unprinted: the daemon's cache filled from disk first
  load_seconds=2 load "$@" > /dev/null
}
tls_args=(--tls-ca "$work/ca.pem" --token-file "$work/token")

serve local -- --listen "unix:$work/g.sock" --listen tcp:127.0.0.1:0 \
  --tls-cert "$work/server.pem" --tls-key "$work/server.key" --token-file "$work/token"
local_pid=${pids[-1]}
tls="tls:$(grep -o 'tcp:.*' "$work/local.out" | cut -c5-)"
warm -- "unix:$work/g.sock" "$local_pid"
echo "unshaped:"
for run in $(seq "${RUNS:-3}"); do
  python3 "$here/loopback_tcp.py" --seconds "$seconds"
  load -- "unix:$work/g.sock" "$local_pid"
  load -- "$tls" "$local_pid" "${tls_args[@]}"
done
[[ -n "$rates" ]] || exit 0

kill "$local_pid"
ip netns add "$ns"
ip -n "$ns" link set lo up
in_ns=(ip netns exec "$ns")
serve plain "${in_ns[@]}" -- --listen tcp:127.0.0.1:7070 --insecure
plain_pid=${pids[-1]}
serve tls "${in_ns[@]}" -- --listen tcp:127.0.0.1:7071 \
  --tls-cert "$work/server.pem" --tls-key "$work/server.key" --token-file "$work/token"
tls_pid=${pids[-1]}
warm "${in_ns[@]}" -- tcp:127.0.0.1:7070 "$plain_pid"
warm "${in_ns[@]}" -- tls:127.0.0.1:7071 "$tls_pid" "${tls_args[@]}"
for rate in $rates; do
  "${in_ns[@]}" tc qdisc replace dev lo root tbf rate "$rate" burst 1mb latency 50ms
  echo "loopback shaped to $rate:"
  for run in $(seq "${RUNS:-3}"); do
    "${in_ns[@]}" python3 "$here/loopback_tcp.py" --seconds "$seconds"
    load "${in_ns[@]}" -- tcp:127.0.0.1:7070 "$plain_pid"
    load "${in_ns[@]}" -- tls:127.0.0.1:7071 "$tls_pid" "${tls_args[@]}"
  done
done
