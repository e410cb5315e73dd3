#!/usr/bin/env bash
# Beyond RAM: a synthetic k2-slice model at least twice the memory budget,
# decoded inside a memory cgroup whose limit is the "RAM" (4/3 of BUDGET, so
# the planner's default, 3/4 of the limit, is BUDGET; O_DIRECT reads bypass
# the page cache, so the expert cache inside the budget is the only RAM the
# experts get). Each run prints the cgroup's peak memory.
# A/B in the same run at equal budget: prefetch + lookahead, lookahead off,
# the synchronous path. Figures go to docs/EFFICIENCY.md.
#   tests/bench/beyond_ram.sh BUILD_DIR [MODEL_SIZE] [BUDGET]
set -euo pipefail
build=${1:-build}
size=${2:-30G}
budget=${3:-8G}
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-beyond.XXXXXX")
source "$(dirname "$0")/memory_cgroup.sh"
trap 'rm -rf "$work"; cgroup_remove' EXIT
cgroup_for_budget "$budget"
"$build/bin/computed" synth --quiet --arch deepseek_v3 --preset k2-slice --size "$size" \
  "$work/k2.warp" | tail -1
"$build/bin/computed" plan "$work/k2.warp" --context 64 --budget "$budget"
prompt=$(seq -s, 11 26)  # 16 prompt tokens
for config in "" "--lookahead 0" "--no-prefetch --lookahead 0" ""; do
  echo
  echo "== budget $budget ${config:-(prefetch + lookahead 6)}"
  cgroup_run "$build/bin/computed" --log-level warn run "$work/k2.warp" "$prompt" -n 16 \
    --budget "$budget" --prefill-chunk 1 --stages $config 2>&1 >/dev/null
  echo "  cgroup peak memory: $(cgroup_peak)"
done
if [[ -n "$cgroup" ]]; then
  echo
  echo "== no --budget: the planner's default inside the cgroup"
  cgroup_run "$build/bin/computed" run "$work/k2.warp" "$prompt" -n 4 --prefill-chunk 1 2>&1 \
    >/dev/null | grep -E "budget|^\["
  echo "  cgroup peak memory: $(cgroup_peak)"
fi

# --learn: a cold run records the experts it used (and its routing trace);
# the next run preloads the hottest into the cache. Warm vs cold hit rate.
echo
echo "== cold run with --learn --trace, then a warm run"
cgroup_run "$build/bin/computed" --log-level warn run "$work/k2.warp" "$prompt" -n 16 --budget "$budget" \
  --prefill-chunk 1 --learn --trace "$work/trace.txt" 2>&1 >/dev/null | grep '^\['
cgroup_run "$build/bin/computed" --log-level warn run "$work/k2.warp" "$prompt" -n 16 --budget "$budget" \
  --prefill-chunk 1 2>&1 >/dev/null | grep '^\['

echo
echo "== cache policies on the recorded trace (records of 23.6 MiB; the run's cache held"
echo "   $(( $(numfmt --from=iec "$budget") * 3 / 4 / 24776704 )) of them at most)"
"$build/bench/cache_sim" "$work/trace.txt" --fractions 0.05,0.1,0.25,0.5
