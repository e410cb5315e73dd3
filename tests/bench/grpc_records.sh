#!/usr/bin/env bash
# Records over gRPC against the link (issue 47, section 2): one client reading
# records from a daemon whose cache holds them all (so the disk is out of it),
# over gRPC on a Unix socket and over TLS on loopback TCP, against one raw
# TCP stream over loopback in the same run (tests/bench/loopback_tcp.py, the
# iperf-like bound). Three runs of each; prints every run's bytes/s.
#   tests/bench/grpc_records.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
build=${1:-build}
seconds=${2:-4}
here=$(dirname "$0")
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-grpc-records.XXXXXX")
daemon=""
trap '[[ -n "$daemon" ]] && kill "$daemon" 2>/dev/null; rm -rf "$work"' EXIT
bash "$here/../testing/make_test_certificates.sh" "$work" > /dev/null 2>&1
"$build/bin/computed" --log-level warn synth --quiet --arch deepseek_v3 --preset k2-slice \
  --size 1500M "$work/m.warp" | tail -1
"$build/bin/expertd" --log-level warn serve --model "$work/m.warp" --budget 1G \
  --listen "unix:$work/g.sock" --listen tcp:127.0.0.1:0 --tls-cert "$work/server.pem" \
  --tls-key "$work/server.key" --token-file "$work/token" > "$work/expertd.out" &
daemon=$!
for _ in $(seq 100); do
  [[ $(grep -c '^listening' "$work/expertd.out" || true) == 2 ]] && break
  sleep 0.1
done
tls="tls:$(grep -o 'tcp:.*' "$work/expertd.out" | cut -c5-)"
for run in 1 2 3; do
  python3 "$here/loopback_tcp.py" --seconds "$seconds"
  "$build/bench/daemon_load" "$work/m.warp" "unix:$work/g.sock" --pid "$daemon" --clients 1 \
    --seconds "$seconds" --keys-per-read 8 | head -1
  "$build/bench/daemon_load" "$work/m.warp" "$tls" --pid "$daemon" --clients 1 \
    --seconds "$seconds" --keys-per-read 8 --tls-ca "$work/ca.pem" --token-file "$work/token" |
    head -1
done
