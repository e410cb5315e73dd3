#!/usr/bin/env bash
# `make demo`: the main job on the embedded default, in a temp dir. Converts
# the small trained demo model (tests/demo_model: deepseek_v3 architecture,
# trained on the King James Bible with its own BPE tokenizer), then has it
# continue a prompt inside a memory budget that leaves room for only a few
# experts, so most of them stream from disk; then one chat turn.
set -euo pipefail
bin=${1:-build/bin}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
checkpoint="$root/tests/demo_model/kjv-moe"
budget=${WARP_DEMO_BUDGET:-6M}

echo "== computed convert: the Hugging Face checkpoint (bf16) and its tokenizer to a .warp container"
"$bin/computed" convert --quiet "$checkpoint" "$work/kjv.warp"
echo
echo "== computed plan: memory figures from the manifest alone"
"$bin/computed" plan "$work/kjv.warp" --context 128
echo
echo "== computed tokenize: the model's own byte-level BPE"
"$bin/computed" tokenize --tokenizer "$work/kjv.warp" "In the beginning God created"
echo
prompt="And God said,"
echo "== computed run --raw \"$prompt\" (sampled, seed 1): budget $budget, so most experts stream from disk"
"$bin/computed" --log-level warn run "$work/kjv.warp" "$prompt" --raw -n 48 --budget "$budget" \
  --temperature 0.7 --top-k 40 --seed 1 \
  --stages
echo
question="The LORD is my shepherd;"
echo "== computed run \"$question\": through the chat template"
"$bin/computed" --log-level warn run "$work/kjv.warp" "$question" -n 32 --budget "$budget"
echo
echo "== expertd verify: every record footer and CRC32C"
"$bin/expertd" verify --quiet "$work/kjv.warp"
