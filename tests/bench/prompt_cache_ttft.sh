#!/usr/bin/env bash
# Time to first token with the prompt cache on disk, cold and warm after a
# restart, on a model beyond its memory budget (issue 48 part 4): a
# Qwen3-30B-A3B slice of SIZE decoded with BUDGET, a PROMPT-token prompt,
# then the same prompt plus a 64-token turn in a new session
# (prompt_cache_bench). The entry's read comes from the page cache when the
# kernel still holds it, as it would after a server restart; the disk's own
# read of it is bounded by fio on the same file in the same run.
# Figures go to docs/EFFICIENCY.md.
#   tests/bench/prompt_cache_ttft.sh BUILD_DIR [SIZE] [BUDGET] [PROMPT]
set -euo pipefail
build=${1:-build}
size=${2:-12G}
budget=${3:-4G}
prompt=${4:-4096}
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-pcache.XXXXXX")
trap 'rm -rf "$work"' EXIT
model="$work/a3b-slice.warp"
"$build/bin/computed" synth --quiet --arch qwen3_moe --preset a3b-slice --size "$size" "$model" |
  tail -1
"$build/bin/computed" plan "$model" --context $((prompt + 72)) --budget "$budget" |
  grep -E '^(model|budget|working)' || true
"$build/bench/prompt_cache_bench" "$model" "$work/cache" --budget "$budget" --prompt "$prompt" \
  --turn 64
entry=$(ls -S "$work"/cache/*.wpc | head -1)
echo "entry: $(du -h "$entry" | cut -f1) ($entry)"
if command -v fio > /dev/null; then
  fio --name=entry --filename="$entry" --rw=read --bs=4M --direct=1 --ioengine=psync \
    --readonly 2>/dev/null | grep -E 'READ:' || true
fi
