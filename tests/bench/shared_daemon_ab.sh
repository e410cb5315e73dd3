#!/usr/bin/env bash
# Two clients decoding at once through one daemon, for two expertd binaries in
# one run (an A/B of the daemon alone: the clients are this build's). Each
# round starts each daemon in turn on MODEL with BUDGET of cache and runs two
# `computed run` clients against it over the fast path at the same time:
# different prompts and sampling seeds, so their layers drift apart, and the
# default lookahead (CLIENT_ARGS adds flags to every client, e.g.
# "--lookahead 16 --lookahead-precision 0": every guess hinted). Prints each
# client's stats line; ends with the median decode tok/s and lookahead hits
# per daemon.
#   tests/bench/shared_daemon_ab.sh BUILD_DIR MODEL.warp BUDGET ROUNDS EXPERTD_A EXPERTD_B
# e.g. EXPERTD_A an older build's bin/expertd (whose cancels dropped every
# client's queued hints), EXPERTD_B build/bin/expertd.
set -euo pipefail
build=$1 model=$2 budget=$3 rounds=$4
daemons=("$5" "$6")
gen=${GEN:-32}
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-shared.XXXXXX")
pid=""
cleanup() {
  [[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
vocab=$(python3 -c "import json; print(json.load(open('$model/manifest.json'))['config']['vocab_size'])")
prompt() { python3 -c "import random; random.seed($1); print(','.join(str(random.randrange($vocab)) for _ in range(8)))"; }

for round in $(seq 1 "$rounds"); do
  for d in 0 1; do
    "${daemons[$d]}" serve --model "$model" --budget "$budget" --listen "fastpath:$work/d.fp" \
      > "$work/daemon.out" 2>&1 &
    pid=$!
    for _ in $(seq 100); do [[ -S $work/d.fp ]] && break; sleep 0.1; done
    clients=()
    for client in 1 2; do
      "$build/bin/computed" --log-level warn run "$model" "$(prompt $((round * 10 + client)))" --ids \
        --raw -n "$gen" --ignore-eos --temperature 1 --seed "$client" \
        --stores "fastpath:$work/d.fp" ${CLIENT_ARGS:-} > "$work/c$client.out" 2>&1 &
      clients+=($!)
    done
    wait "${clients[@]}"
    for client in 1 2; do
      line=$(grep -o '\[prefill.*' "$work/c$client.out" | tail -1)
      echo "round $round daemon $((d + 1)) client $client: $line" | tee -a "$work/lines"
    done
    kill -TERM "$pid" && wait "$pid" 2>/dev/null || true
    pid=""
    rm -f "$work/d.fp"
  done
done
python3 - "$work/lines" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.search(r"daemon (\d) client \d: .*decode \d+ tokens ([0-9.]+) tok/s: experts (\d+) hit / "
                  r"(\d+) miss \d+%(?:, (\d+) lookahead hits)?", line)
    if m:
        rows.setdefault(m.group(1), []).append([float(m.group(i) or 0) for i in range(2, 6)])
for d, r in sorted(rows.items()):
    print(f"daemon {d}: decode tok/s median {statistics.median(x[0] for x in r):.2f} "
          f"({', '.join(f'{x[0]:.2f}' for x in r)}); lookahead hits median "
          f"{statistics.median(x[3] for x in r):.0f}, misses median {statistics.median(x[2] for x in r):.0f}")
PY
