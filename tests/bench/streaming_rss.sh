#!/usr/bin/env bash
# Peak memory of the streaming writer and reader: `computed synth` of a
# k2-slice model at each SIZE and `expertd verify` of the first, under
# /usr/bin/time -v. Produces the "Memory of the streaming writer and reader"
# table of docs/EFFICIENCY.md: the RSS must not grow with the model.
#   tests/bench/streaming_rss.sh BUILD_DIR [SIZE ...]      default sizes: 6G 20G
set -euo pipefail
build=${1:-build}
shift || true
sizes=("$@")
[[ ${#sizes[@]} -eq 0 ]] && sizes=(6G 20G)
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-rss.XXXXXX")
trap 'rm -rf "$work"' EXIT
max_rss() { awk -F': ' '/Maximum resident set size/ {printf "%.0f MiB", $2 / 1024}' "$1"; }
first=""
for size in "${sizes[@]}"; do
  model="$work/k2-$size.warp"
  /usr/bin/time -v -o "$work/time.txt" "$build/bin/computed" --log-level warn synth --quiet \
    --arch deepseek_v3 --preset k2-slice --size "$size" "$model" > /dev/null
  records=$(python3 -c "import json; m = json.load(open('$model/manifest.json')); \
print(sum(b['num_experts'] for b in m['banks']), 'records in', len(m['banks']), 'bank(s)')")
  echo "computed synth --preset k2-slice --size $size: $(du -sh "$model" | cut -f1), $records:" \
    "max RSS $(max_rss "$work/time.txt")"
  if [[ -z "$first" ]]; then
    first=$model
  else
    rm -rf "$model"
  fi
done
/usr/bin/time -v -o "$work/time.txt" "$build/bin/expertd" verify --quiet "$first" > /dev/null
echo "expertd verify of the ${sizes[0]} model: max RSS $(max_rss "$work/time.txt")"
