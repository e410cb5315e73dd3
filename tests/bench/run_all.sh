#!/usr/bin/env bash
# `make bench`: the foundation's benchmarks, each next to its hardware bound,
# measured in the same run. Figures go to docs/EFFICIENCY.md.
#   tests/bench/run_all.sh BUILD_DIR [SIZE]     SIZE of the synthetic model, default 8G
# The model is written under $TMPDIR (default /tmp) and deleted at the end.
set -euo pipefail
build=${1:-build}
size=${2:-8G}
bash "$(dirname "$0")/../../deploy/install-deps.sh" --bench
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== CRC32C vs memory read bandwidth"
"$build/bench/crc32c_bench" 256

echo
echo "== matrix kernels vs memory read bandwidth (docs/EFFICIENCY.md: matrix kernels)"
"$build/bench/matmul_bench"

echo
echo "== cache policies on a Zipf trace (docs/EFFICIENCY.md: LRU vs LFRU vs MIN)"
"$build/bench/cache_sim" --zipf 384,4,8,2000,1.0

echo
echo "== synth write vs fio sequential O_DIRECT write (same filesystem, same size)"
"$build/bin/computed" synth --arch deepseek_v3 --preset k2-slice --size "$size" --quiet \
  "$work/k2.warp" | tail -1
bytes=$(du -sb "$work/k2.warp" | cut -f1)
fio --name=write --filename="$work/fio.bin" --rw=write --bs=8M --direct=1 \
  --size="$bytes" --ioengine=psync --numjobs=1 --group_reporting 2>/dev/null |
  grep -E "^ +WRITE:" | sed 's/^ */fio /'
rm -f "$work/fio.bin"

echo
echo "== expertd verify (read + CRC of every record) vs fio O_DIRECT read of the bank"
"$build/bin/expertd" verify --quiet "$work/k2.warp"
bank=$(ls "$work"/k2.warp/experts-L*.bin | head -1)
record=$(python3 -c "import json,sys; print(json.load(open('$work/k2.warp/manifest.json'))['banks'][0]['record_bytes'])")
fio --name=read --filename="$bank" --rw=read --bs=64M --direct=1 --ioengine=psync \
  --readonly 2>/dev/null | grep -E "^ +READ:" | sed 's/^ */fio 64M seq: /'
fio --name=read --filename="$bank" --rw=randread --bs="$record" --direct=1 --ioengine=psync \
  --readonly --size=4G 2>/dev/null | grep -E "^ +READ:" | sed 's/^ */fio 1 record random: /'

echo
echo "== expert store: random whole-record reads, each path vs fio randread (same bank, bs, qd)"
qd=4
sock="$work/expertd.sock"
# Misses: a daemon without a cache, on gRPC (Unix socket, TCP) and the fast path.
"$build/bin/expertd" --log-level warn serve --model "$work/k2.warp" --budget 0 \
  --io-threads "$qd" --listen "unix:$sock" --listen tcp:127.0.0.1:0 --insecure \
  --listen "fastpath:$work/miss.fp" > "$work/expertd.out" &
daemon=$!
# Fast-path hits: a daemon with a 1 GiB cache (its "hit" line reads 4 hot records).
"$build/bin/expertd" --log-level warn serve --model "$work/k2.warp" --budget 1G \
  --io-threads "$qd" --listen "fastpath:$work/hit.fp" > "$work/expertd-hit.out" &
daemon_hit=$!
for _ in $(seq 50); do
  [[ $(wc -l < "$work/expertd.out") -ge 3 && $(wc -l < "$work/expertd-hit.out") -ge 1 ]] && break
  sleep 0.1
done
tcp=$(grep -o 'tcp:.*' "$work/expertd.out")
echo "(rows: unix = gRPC over a Unix socket; tcp = gRPC over TCP loopback;"
echo " miss.fp = fast path, miss (no cache); hit.fp hit = fast path, hit (1 GiB cache))"
"$build/bench/store_bench" "$work/k2.warp" --qd "$qd" --seconds 5 \
  --store "unix:$sock" --store "$tcp" --store "fastpath:$work/miss.fp" \
  --store "fastpath:$work/hit.fp"
kill -TERM "$daemon" "$daemon_hit"; wait "$daemon" "$daemon_hit" || true
fio --name=randread --filename="$bank" --rw=randread --bs="$record" --direct=1 \
  --ioengine=libaio --iodepth="$qd" --readonly --runtime=5 --time_based 2>/dev/null |
  grep -E "^ +READ:" | sed "s/^ */fio randread qd $qd: /"
