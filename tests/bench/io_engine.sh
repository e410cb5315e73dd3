#!/usr/bin/env bash
# The I/O engine (`--io-engine pread|uring`) that chooses kDefaultIoBackend
# (common/store/bank_set.h), in one run, engines alternating:
#   1. fio on one bank at the record size: psync with as many jobs as readers
#      (the pread engine's shape) and io_uring with 1 MiB pieces in flight
#      (the uring engine's shape) — the bounds;
#   2. store_bench misses into cache slots and without one (a daemon's
#      --budget 0, an unadmitted lookahead read), each engine, REPS times;
#   3. whole-engine decode in a memory cgroup (beyond_ram.sh's shape), each
#      engine, REPS times, sampled, never greedy.
# Figures go to docs/EFFICIENCY.md ("I/O engine"); the decision to LEARNED.md.
#   tests/bench/io_engine.sh BUILD_DIR [MODEL_SIZE] [BUDGET] [REPS]
set -euo pipefail
build=${1:-build}
size=${2:-13G}
budget=${3:-3G}
reps=${4:-3}
readers=4  # the embedded store's default --io-threads
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-io-engine.XXXXXX")
source "$(dirname "$0")/memory_cgroup.sh"
trap 'rm -rf "$work"; cgroup_remove' EXIT
"$build/bin/computed" synth --quiet --arch deepseek_v3 --preset k2-slice --size "$size" \
  "$work/k2.warp" | tail -1
bank=$(ls "$work"/k2.warp/experts-L*.bin | head -1)
record=$(python3 -c "import json; print(json.load(open('$work/k2.warp/manifest.json'))['banks'][0]['record_bytes'])")
pieces=$(( (record + (1 << 20) - 1) >> 20 ))

fio_read() {  # LABEL FIO-ARGS...
  local label=$1
  shift
  fio --name=randread --filename="$bank" --rw=randread --direct=1 --readonly --runtime=5 \
    --time_based --group_reporting "$@" 2>/dev/null | grep -E "^ +READ:" |
    sed "s/^ */fio $label: /"
}

echo
echo "== bounds: fio random reads of one bank"
fio_read "psync x$readers, bs record" --bs="$record" --ioengine=psync --numjobs="$readers"
fio_read "io_uring x$readers, 1 MiB x $pieces in flight" --bs=1M --ioengine=io_uring \
  --iodepth="$pieces" --numjobs="$readers"

echo
echo "== store_bench: misses, queue depth 8, $readers readers (into cache slots, then without)"
for _ in $(seq "$reps"); do
  for engine in pread uring; do
    "$build/bench/store_bench" "$work/k2.warp" --qd 8 --seconds 5 --miss-only \
      --io-engine "$engine" --io-threads "$readers" --miss-cache 400000000 2>&1 | grep "miss"
    "$build/bench/store_bench" "$work/k2.warp" --qd 8 --seconds 5 --miss-only \
      --io-engine "$engine" --io-threads "$readers" 2>&1 | grep "miss" | sed 's/miss/miss, no slot/'
  done
done

echo
cgroup_for_budget "$budget"
prompt=$(seq -s, 11 26)
for _ in $(seq "$reps"); do
  for engine in pread uring; do
    echo "== decode, budget $budget, --io-engine $engine"
    cgroup_run "$build/bin/computed" --log-level warn run "$work/k2.warp" "$prompt" -n 16 \
      --temperature 1 --seed 7 --budget "$budget" --prefill-chunk 1 --io-engine "$engine" \
      2>&1 >/dev/null | grep -E '^\[|decode'
  done
done
