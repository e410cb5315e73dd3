#!/usr/bin/env bash
# Cache policies and foresight on every kind of trace: the trained demo
# model's (tests/bench/trained_trace.sh), random routing of a Qwen3-30B-A3B
# slice (10 MoE layers x 128 experts, 400 sampled tokens) and of a Kimi K3
# slice (896 experts, top-16, 800 sampled tokens), and two Zipf traces. For
# each: LRU, LFRU, ARC, DUEL (the default) and Belady's MIN, then RecordCache
# with and without foresight at recalls 0.5, 0.8 and 1. The synthetic models
# (12 and 18 GiB) are written under a temp dir and deleted.
#   tests/bench/policy_traces.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-policies.XXXXXX")
trap 'rm -rf "$work"' EXIT
recalls=0.5,0.8,1

echo "== trained demo model"
WARP_TRACE_OUT="$work/trained.trace" "$root/tests/bench/trained_trace.sh" "$build" > /dev/null
"$build/bench/cache_sim" "$work/trained.trace" --budgets 5,8,10,17,24,32,48 --foresight "$recalls"

# Random weights, sampled decoding: routing as random as the router makes it.
random_trace() {  # NAME ARCH PRESET SIZE TOKENS
  "$build/bin/computed" synth --quiet --arch "$2" --preset "$3" --size "$4" "$work/$1.warp"
  "$build/bin/computed" --log-level warn run "$work/$1.warp" 1,2,3,4 --raw -n "$5" --ignore-eos \
    --temperature 1 --seed 3 --trace "$work/$1.trace" > /dev/null 2>&1
  rm -rf "$work/$1.warp"
  echo
  echo "== $1 (random weights, $5 sampled tokens)"
  "$build/bench/cache_sim" "$work/$1.trace" --foresight "$recalls"
}
random_trace a3b-slice qwen3_moe a3b-slice 12G 400
random_trace k3-slice kimi_k3 k3-slice 20G 800

for zipf in 384,4,8,2000,1.0 128,8,8,2000,0.5; do
  echo
  echo "== zipf $zipf"
  "$build/bench/cache_sim" --zipf "$zipf" --foresight "$recalls"
done
