#!/usr/bin/env bash
# `make demo`: the main job on the embedded default, in a temp dir.
# Until the trained demo model and its tokenizer land (issue 6), it runs the
# tiny reference checkpoint of the deepseek_v3 (Kimi K2) family on token ids.
set -euo pipefail
bin=${1:-build/bin}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
fixture="$root/tests/fixtures/deepseek_v3_bf16"

echo "== computed convert: a Hugging Face checkpoint (deepseek_v3, bf16) to a .warp container"
"$bin/computed" convert --quiet "$fixture" "$work/model.warp"
echo
echo "== computed plan: memory figures from the manifest alone"
"$bin/computed" plan "$work/model.warp" --context 64
echo
echo "== computed run: a budget just above the floor, so most experts stream from disk"
"$bin/computed" --log-level warn run "$work/model.warp" "$(cat "$fixture/tokens.txt")" -n 16 \
  --budget 660K --stages
echo "   (the PyTorch reference continues with: $(cat "$fixture/greedy.txt"))"
echo
echo "== expertd verify: every record footer and CRC32C"
"$bin/expertd" verify --quiet "$work/model.warp"
