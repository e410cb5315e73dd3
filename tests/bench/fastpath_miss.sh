#!/usr/bin/env bash
# Fast-path misses against the embedded miss, in one run (issue 14 part 5: the
# fast path's miss without a cache at >= 90% of the embedded miss).
#   tests/bench/fastpath_miss.sh BUILD_DIR [SIZE] [ROUNDS] [SECONDS]
# A synthetic k2-slice of SIZE (default 8G) under $TMPDIR, deleted at the end;
# two `--budget 0` daemons on it: staged.fp (staging slots, the default) and
# copied.fp (--staging-slots 0: records copied through the socket); a warm-up
# round, then each round:
# store_bench --qd 4 over the embedded store (uring, as the daemons) and both
# daemons, their order swapped every round, then fio libaio qd 4 on the bank.
# Ends with each path's median and its median ratio to the same round's
# embedded miss, then `computed run` decoding 16 sampled tokens through each
# daemon (every expert read from disk), alternating, DECODE_ROUNDS (3) times.
set -euo pipefail
build=${1:-build}
size=${2:-8G}
rounds=${3:-8}
seconds=${4:-6}
qd=4
bash "$(dirname "$0")/../../deploy/install-deps.sh" --bench
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-fastpath.XXXXXX")
daemons=()
cleanup() {
  [[ ${#daemons[@]} -gt 0 ]] && kill -TERM "${daemons[@]}" 2>/dev/null && wait "${daemons[@]}" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$build/bin/computed" synth --arch deepseek_v3 --preset k2-slice --size "$size" --quiet \
  "$work/k2.warp" | tail -1
bank=$(ls "$work"/k2.warp/experts-L*.bin | head -1)
record=$(python3 -c "import json; print(json.load(open('$work/k2.warp/manifest.json'))['banks'][0]['record_bytes'])")

for kind in staged copied; do
  extra=()
  [[ $kind == copied ]] && extra=(--staging-slots 0)
  "$build/bin/expertd" serve --model "$work/k2.warp" --budget 0 --io-threads "$qd" \
    "${extra[@]}" --listen "fastpath:$work/$kind.fp" > "$work/expertd-$kind.out" 2>&1 &
  daemons+=($!)
done
for _ in $(seq 100); do
  grep -q listening "$work/expertd-staged.out" && grep -q listening "$work/expertd-copied.out" && break
  sleep 0.1
done
grep -h "staging slots" "$work"/expertd-*.out | sed 's/^/daemon: /'

# A daemon's first reads check every record's CRC32C and fault its staging
# slots in (once in its life): a warm-up round, not counted.
"$build/bench/store_bench" "$work/k2.warp" --qd "$qd" --seconds 4 --no-hits --miss-only \
  > /dev/null
for kind in staged copied; do
  "$build/bench/store_bench" "$work/k2.warp" --qd "$qd" --seconds 4 --no-hits \
    --store "fastpath:$work/$kind.fp" > /dev/null
done

results="$work/results.tsv"
for round in $(seq "$rounds"); do
  if (( round % 2 )); then order=(staged copied); else order=(copied staged); fi
  echo "== round $round (${order[*]})"
  "$build/bench/store_bench" "$work/k2.warp" --qd "$qd" --seconds "$seconds" --no-hits \
    --io-engine uring --io-threads "$qd" \
    --store "fastpath:$work/${order[0]}.fp" --store "fastpath:$work/${order[1]}.fp" |
    tee "$work/round.out"
  fio_line=$(fio --name=randread --filename="$bank" --rw=randread --bs="$record" --direct=1 \
    --ioengine=libaio --iodepth="$qd" --readonly --runtime="$seconds" --time_based 2>/dev/null |
    grep -E "^ +READ:")
  echo "fio libaio qd $qd: $fio_line"
  python3 - "$round" "$work/round.out" "$fio_line" >> "$results" <<'EOF'
import re, sys
round_, path, fio = sys.argv[1], sys.argv[2], sys.argv[3]
for line in open(path):
    m = re.match(r"(.+?)\s+([\d.]+) GB/s", line)
    if not m:
        continue
    name = m.group(1).strip()
    name = "embedded" if name.startswith("embedded miss") else name.rsplit("/", 1)[-1]
    print(f"{round_}\t{name}\t{m.group(2)}")
m = re.search(r"\(([\d.]+)([MG])B/s\)", fio)
if m:
    print(f"{round_}\tfio\t{float(m.group(1)) / (1000 if m.group(2) == 'M' else 1):.2f}")
EOF
done

echo
echo "== medians over $rounds rounds (GB/s; ratio: to the same round's embedded miss)"
python3 - "$results" <<'EOF'
import collections, statistics, sys
rate = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    round_, name, gbs = line.split("\t")
    rate[name][round_] = float(gbs)
for name in ["embedded", "staged.fp", "copied.fp", "fio"]:
    if name not in rate:
        continue
    values = list(rate[name].values())
    ratios = [rate[name][r] / rate["embedded"][r] for r in rate[name] if r in rate["embedded"]]
    print(f"{name:10s} median {statistics.median(values):5.2f} GB/s  "
          f"range {min(values):.2f}-{max(values):.2f}  "
          f"vs embedded: median {statistics.median(ratios):.0%} "
          f"({', '.join(f'{x:.0%}' for x in ratios)})")
EOF

echo
echo "== computed run through each daemon: 8 prompt ids, 16 sampled tokens (decode tok/s)"
vocab=$(python3 -c "import json; print(json.load(open('$work/k2.warp/manifest.json'))['config']['vocab_size'])")
ids=$(python3 -c "import random; random.seed(8); print(','.join(str(random.randrange($vocab)) for _ in range(8)))")
for round in $(seq "${DECODE_ROUNDS:-3}"); do
  for kind in staged copied; do
    line=$("$build/bin/computed" --log-level warn run "$work/k2.warp" --ids "$ids" -n 16 \
      --ignore-eos --temperature 1 --seed "$round" --stores "fastpath:$work/$kind.fp" 2>&1 \
      >/dev/null | grep '^\[')
    decode=$(grep -oE 'decode [0-9]+ tokens [0-9.]+ tok/s' <<< "$line" | awk '{print $4}')
    echo "$kind round $round: decode $decode tok/s, $(grep -oE '[0-9.]+ [KMG]iB a token' <<< "$line")"
  done
done
