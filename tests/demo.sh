#!/usr/bin/env bash
# `make demo`: synthesize a model, plan it and verify it, in a temp dir.
set -euo pipefail
bin=${1:-build/bin}
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== computed synth: a tiny deepseek_v3 (Kimi K2 architecture) model"
"$bin/computed" synth --arch deepseek_v3 --preset tiny --seed 7 "$work/tiny.warp"
echo
echo "== computed plan: memory figures from the manifest alone"
"$bin/computed" plan "$work/tiny.warp" --context 8192
echo
echo "== expertd verify: every record footer and CRC32C"
"$bin/expertd" verify --quiet "$work/tiny.warp"
