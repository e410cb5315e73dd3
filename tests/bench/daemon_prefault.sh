#!/usr/bin/env bash
# A fresh daemon's fast-path misses with its cache faulted in ahead (the
# default) and without (--no-prefault), alternating.
#   tests/bench/daemon_prefault.sh BUILD_DIR [SIZE] [BUDGET] [ROUNDS] [WAIT]
# A synthetic k2-slice of SIZE (default 8G) under $TMPDIR, deleted at the end.
# Each round starts one daemon per setting with a cache of BUDGET (default 4G),
# waits WAIT seconds (default 10: a client arriving after the daemon started),
# then runs `store_bench --qd 4 --seconds 3 --no-hits` through it twice (pass
# 1: every read a miss into a cache slot never used; pass 2: some hits), with
# the embedded miss (no cache) of the same store_bench run as the reference.
set -euo pipefail
build=${1:-build}
size=${2:-8G}
budget=${3:-4G}
rounds=${4:-2}
wait_seconds=${5:-10}
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-prefault.XXXXXX")
daemon=
cleanup() {
  [[ -n "$daemon" ]] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$build/bin/computed" synth --arch deepseek_v3 --preset k2-slice --size "$size" --quiet \
  "$work/k2.warp" | tail -1
for round in $(seq "$rounds"); do
  for setting in --no-prefault ""; do
    sync
    echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
    rm -f "$work/fp"
    "$build/bin/expertd" serve --model "$work/k2.warp" --budget "$budget" --no-verify \
      --listen "fastpath:$work/fp" $setting > "$work/expertd.out" 2>&1 &
    daemon=$!
    sleep "$wait_seconds"
    for pass in 1 2; do
      "$build/bench/store_bench" "$work/k2.warp" --qd 4 --seconds 3 --no-hits --no-verify \
        --store "fastpath:$work/fp" |
        awk -v tag="round $round, ${setting:-prefault}, pass $pass" \
          '/^embedded miss|^fastpath:/ { sub(/fastpath:[^ ]*/, "fast path"); print tag ": " $0 }'
    done
    kill -TERM "$daemon"
    wait "$daemon" 2>/dev/null || true
    daemon=
  done
done
