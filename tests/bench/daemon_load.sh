#!/usr/bin/env bash
# Many clients against one expertd (issue 15's load test): CLIENTS clients
# over the fast path, over gRPC on a Unix socket, and over gRPC with TLS and
# a token on loopback TCP, each reading random
# records in a loop for SECONDS, from a daemon whose cache holds them all (so
# the figures are the daemon's request handling, not the disk). Prints
# records/s, bytes/s, errors and the daemon's RSS, descriptors and threads
# before, under load and after the clients leave. Figures: docs/EFFICIENCY.md.
#   tests/bench/daemon_load.sh BUILD_DIR [CLIENTS] [SECONDS] [PRESET]
set -euo pipefail
build=${1:-build}
clients=${2:-64}
seconds=${3:-10}
preset=${4:-tiny}
here=$(dirname "$0")
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-daemon-load.XXXXXX")
daemon=""
trap '[[ -n "$daemon" ]] && kill "$daemon" 2>/dev/null; rm -rf "$work"' EXIT
bash "$here/../testing/make_test_certificates.sh" "$work" > /dev/null 2>&1
"$build/bin/computed" --log-level warn synth --quiet --preset "$preset" "$work/m.warp" | tail -1
bytes=$(du -sb "$work/m.warp" | cut -f1)
"$build/bin/expertd" --log-level warn serve --model "$work/m.warp" --budget "$bytes" \
  --listen "fastpath:$work/f.sock" --listen "unix:$work/g.sock" --listen tcp:127.0.0.1:0 \
  --tls-cert "$work/server.pem" --tls-key "$work/server.key" --token-file "$work/token" \
  > "$work/expertd.out" &
daemon=$!
for _ in $(seq 100); do
  [[ $(grep -c '^listening' "$work/expertd.out" || true) == 3 ]] && break
  sleep 0.1
done
tls="tls:$(grep -o 'tcp:.*' "$work/expertd.out" | cut -c5-)"
echo "== $clients clients, $seconds s each, model $preset ($(numfmt --to=iec "$bytes")B, all cached)"
for keys in 1 8; do
  "$build/bench/daemon_load" "$work/m.warp" "fastpath:$work/f.sock" --pid "$daemon" \
    --clients "$clients" --seconds "$seconds" --keys-per-read "$keys"
  "$build/bench/daemon_load" "$work/m.warp" "unix:$work/g.sock" --pid "$daemon" \
    --clients "$clients" --seconds "$seconds" --keys-per-read "$keys"
  "$build/bench/daemon_load" "$work/m.warp" "$tls" --pid "$daemon" --clients "$clients" \
    --seconds "$seconds" --keys-per-read "$keys" --tls-ca "$work/ca.pem" \
    --token-file "$work/token"
done
