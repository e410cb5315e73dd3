#!/usr/bin/env bash
# The reads in flight (`--io-threads`, the embedded store's reader threads) on a
# model beyond RAM: pipelined and synchronous runs at 1, 2 and 4 readers,
# interleaved so a drift of the disk shows up as a difference between the two
# "prefetch, 1 reader" rows. Same model shape, budget and cgroup as
# beyond_ram.sh. Produces the `--io-threads` table of docs/EFFICIENCY.md.
#   tests/bench/io_threads.sh BUILD_DIR [MODEL_SIZE] [BUDGET]
set -euo pipefail
build=${1:-build}
size=${2:-30G}
budget=${3:-8G}
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-io-threads.XXXXXX")
source "$(dirname "$0")/memory_cgroup.sh"
trap 'rm -rf "$work"; cgroup_remove' EXIT
cgroup_for_budget "$budget"
"$build/bin/computed" synth --quiet --arch deepseek_v3 --preset k2-slice --size "$size" \
  "$work/k2.warp" | tail -1
prompt=$(seq -s, 11 26)  # 16 prompt tokens, as beyond_ram.sh
for config in "prefetch 1" "prefetch 4" "sync 1" "prefetch 2" "sync 4" "prefetch 1"; do
  read -r mode readers <<< "$config"
  flags="--io-threads $readers"
  [[ $mode == sync ]] && flags+=" --no-prefetch --lookahead 0"
  echo
  echo "== $mode, $readers reader(s): $flags"
  # The stats line (tok/s) and the stage report (waiting for reads, compute).
  cgroup_run "$build/bin/computed" --log-level warn run "$work/k2.warp" "$prompt" -n 16 \
    --budget "$budget" --prefill-chunk 1 --stages $flags 2>&1 >/dev/null |
    grep -E '^\[|^  (total|overlap)'
done
