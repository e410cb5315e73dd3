#!/usr/bin/env bash
# Cache policies on the routing of a TRAINED model: the demo model
# (tests/demo_model) reads King James chapters (chunked prefill) and continues
# each; the routing traces of all runs, in order, make one workload for
# cache_sim (LRU vs LFRU vs Belady's MIN). The budgets include the one
# `make demo` runs with (6M: about 17 of the 96 records).
#   tests/bench/trained_trace.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-trace.XXXXXX")
trap 'rm -rf "$work"' EXIT
command -v bible > /dev/null || { echo "needs the bible program (Debian bible-kjv)" >&2; exit 1; }
"$build/bin/computed" convert --quiet "$root/tests/demo_model/kjv-moe" "$work/kjv.warp" 2>/dev/null
: > "$work/all.trace"
for chapter in "Gen 1" "Exo 20" "Ruth 1" "Psa 23" "Psa 119" "Isa 53" "Matt 5" "John 1" "Rom 8" \
               "Rev 21"; do
  # About 300 tokens of the chapter as the prompt, then 100 generated.
  text=$(bible -f "$chapter:1-$chapter:200" 2>/dev/null | sed -E 's/^[0-9A-Za-z]+[0-9]+:[0-9]+ //' |
         tr '\n' ' ' | cut -c1-1200)
  "$build/bin/computed" --log-level warn run "$work/kjv.warp" "$text" --raw -n 100 --ignore-eos \
    --prefill-chunk 16 --budget 6M --trace "$work/one.trace" 2>&1 >/dev/null | grep '^\[' |
    sed "s/^/$chapter: /"
  grep -v '^#' "$work/one.trace" >> "$work/all.trace"
done
echo
echo "== $(wc -l < "$work/all.trace") (token, layer) routings; distinct experts per layer:"
awk '{n = split($3, e, ","); for (i = 1; i <= n; ++i) seen[$2 " " e[i]] = 1}
     END {for (k in seen) {split(k, p, " "); c[p[1]]++} for (l in c) print "  layer " l ": " c[l]}' \
  "$work/all.trace" | sort
echo
[[ -n "${WARP_TRACE_OUT:-}" ]] && cp "$work/all.trace" "$WARP_TRACE_OUT"
"$build/bench/cache_sim" "$work/all.trace" --budgets 8,17,24,32,48
