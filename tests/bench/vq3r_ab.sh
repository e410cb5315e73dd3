#!/usr/bin/env bash
# VQ3R against the experts it was encoded from, at equal memory: two
# containers of one model (e.g. `computed convert M.gguf A.warp` and
# `computed convert M.gguf B.warp --experts vq3r`), decoded alternately inside
# one memory cgroup (WARP's defaults: the budget is the limit less its margin,
# so both get the same RAM), then resident (no cgroup: the kernels' speed).
# Sampled at temperature 1 with a fixed seed; one unrecorded warm-up of each.
# fio reads a bank of each (record-sized O_DIRECT random reads, 4 in flight) as
# the disk's bound. Figures go to docs/EFFICIENCY.md.
#   tests/bench/vq3r_ab.sh BUILD_DIR A.warp B.warp [LIMIT] [ROUNDS]
#   tests/bench/vq3r_ab.sh build /tmp/k2/model.warp /tmp/k2/vq3r.warp 4G 3
set -euo pipefail
build=$1
models=("$2" "$3")
limit=${4:-4G}
rounds=${5:-3}
source "$(dirname "$0")/memory_cgroup.sh"
trap 'cgroup_remove' EXIT
prompt=$(seq -s, 11 26)  # 16 prompt tokens

# run [cgroup|resident] MODEL: the stats line's decode rate and bytes a token.
run() {
  local where=$1 model=$2 out
  local cmd=("$build/bin/computed" --log-level warn run "$model" "$prompt" -n 16
             --temperature 1 --seed 7)
  if [[ $where == cgroup ]]; then out=$(cgroup_run "${cmd[@]}" 2>&1 >/dev/null)
  else out=$("${cmd[@]}" 2>&1 >/dev/null); fi
  local rate bytes
  rate=$(grep -oE 'decode [0-9]+ tokens [0-9.]+ tok/s' <<< "$out" | awk '{print $4}' || true)
  bytes=$(grep -oE '[0-9.]+ [KMGT]?i?B a token' <<< "$out" | head -1 || true)
  [[ -n $rate ]] || { echo "no decode rate in: $out" >&2; exit 1; }
  echo "$rate|$bytes"
}

fio_bound() {
  command -v fio > /dev/null || { echo "fio: not installed (deploy/install-deps.sh --bench)"; return; }
  local bank record
  bank=$(ls "$1"/experts-L*.bin | head -1)
  record=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['banks'][0]['record_bytes'])" \
    "$1/manifest.json")
  fio --name=randread --filename="$bank" --rw=randread --bs="$record" --direct=1 \
    --ioengine=libaio --iodepth=4 --readonly --runtime=8 --time_based 2>/dev/null |
    grep -E "^ +READ:" | sed "s|^ *|fio randread qd 4, $(basename "$1") records of $record B: |"
}

median() { sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

for model in "${models[@]}"; do fio_bound "$model"; done
for where in cgroup resident; do
  if [[ $where == cgroup ]]; then
    cgroup_create "$(numfmt --from=iec "$limit")"
    echo; echo "== inside a $limit memory cgroup, WARP's default budget"
  else
    cgroup_remove; cgroup=""
    echo; echo "== resident (no cgroup)"
  fi
  for model in "${models[@]}"; do run "$where" "$model" > /dev/null; done  # warm-up
  declare -A rates=()
  for (( round = 1; round <= rounds; round++ )); do
    for model in "${models[@]}"; do
      IFS='|' read -r rate bytes < <(run "$where" "$model")
      printf '  round %d %-40s decode %6s tok/s, %s\n' "$round" "$(basename "$model")" "$rate" "$bytes"
      rates[$model]+="$rate "
    done
  done
  a=$(tr ' ' '\n' <<< "${rates[${models[0]}]}" | grep . | median)
  b=$(tr ' ' '\n' <<< "${rates[${models[1]}]}" | grep . | median)
  printf '  median: %s %.2f tok/s, %s %.2f tok/s, ratio %.2fx\n' "$(basename "${models[0]}")" "$a" \
    "$(basename "${models[1]}")" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print b / a}')"
  unset rates
done
