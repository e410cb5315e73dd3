#!/usr/bin/env bash
# What `computed serve --parallel P` gains when REQUESTS requests arrive at
# once: parallel_bench (the server's engine worker, no HTTP; after an untimed
# warm-up set of other requests) for each P, alternating, ROUNDS times, in one
# run — on a synthetic model larger than the budget (experts stream from disk
# through O_DIRECT; only the budget's cache holds them), then with the same
# model resident. Every configuration decodes the same seeded samples of
# random prompts; the figures are total tok/s, the bytes the store read per
# generated token, the mean batch and the batch dedup.
#   tests/bench/serve_parallel.sh BUILD_DIR [MODEL_SIZE] [BUDGET] [ARCH/PRESET] [ROUNDS]
#   tests/bench/serve_parallel.sh build 13G 4G deepseek_v3/k2-slice 2
set -euo pipefail
build=${1:-build}
size=${2:-13G}
budget=${3:-4G}
arch_preset=${4:-deepseek_v3/k2-slice}
rounds=${5:-2}
requests=${REQUESTS:-4}
tokens=${TOKENS:-24}
arch=${arch_preset%%/*}
preset=${arch_preset#*/}
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-parallel.XXXXXX")
trap 'rm -rf "$work"' EXIT
model="$work/$preset.warp"
"$build/bin/computed" synth --quiet --arch "$arch" --preset "$preset" --size "$size" "$model" |
  tail -1
"$build/bin/computed" plan "$model" --context 64 --parallel 4 --budget "$budget" | head -4

for where in "streaming, --budget $budget" resident; do
  echo "== $where: $requests requests of $tokens tokens at once"
  flags=()
  [[ $where == resident ]] || flags=(--budget "$budget")
  for round in $(seq "$rounds"); do
    for parallel in 1 2 4; do
      printf 'round %s  ' "$round"
      "$build/bench/parallel_bench" "$model" --parallel "$parallel" --requests "$requests" \
        --tokens "$tokens" --prompt-tokens 16 --warmup "${flags[@]}" 2>/dev/null
    done
  done
done
