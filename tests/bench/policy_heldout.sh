#!/usr/bin/env bash
# DuelOrder on traces its constants were not tuned on (kTakeOverShare,
# kTakeOverHits and kScoreWindow were chosen on policy_traces.sh's): random
# routing of the presets policy_traces.sh does not run (gpt-oss-120b,
# DeepSeek V4 Flash, Kimi-Linear and Kimi K2 slices, another sampling seed),
# and Zipf traces of other shapes, skews and seeds. For each: LRU, LFRU, ARC,
# DUEL and Belady's MIN at 5-50% of the distinct records; DUEL/best is DUEL
# against the better of LRU and LFRU. The synthetic models are written under a
# temp dir and deleted.
#   tests/bench/policy_heldout.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-heldout.XXXXXX")
trap 'rm -rf "$work"' EXIT

random_trace() {  # NAME ARCH PRESET SIZE TOKENS
  "$build/bin/computed" synth --quiet --arch "$2" --preset "$3" --size "$4" --seed 5 \
    "$work/$1.warp"
  "$build/bin/computed" --log-level warn run "$work/$1.warp" 5,6,7,8 --raw -n "$5" --ignore-eos \
    --temperature 1 --seed 11 --budget 2G --trace "$work/$1.trace" > /dev/null 2>&1
  rm -rf "$work/$1.warp"
  echo
  echo "== $1 (random weights, $5 sampled tokens)"
  "$build/bench/cache_sim" "$work/$1.trace"
}
random_trace gpt-oss-slice gpt_oss 120b-slice 8G 400
random_trace v4-flash-slice deepseek_v4 v4-flash-slice 8G 400
random_trace kimi-linear-slice kimi_linear kimi-linear-slice 8G 400
random_trace k2-slice deepseek_v3 k2-slice 8G 400

for zipf in 256,6,8,3000,0.8 512,4,16,2000,1.2 64,10,4,4000,0.3 384,8,8,3000,0.7 1024,2,32,1500,1.0; do
  echo
  echo "== zipf $zipf, seed 7"
  "$build/bench/cache_sim" --zipf "$zipf" --seed 7
done
