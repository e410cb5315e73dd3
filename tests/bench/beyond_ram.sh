#!/usr/bin/env bash
# Beyond RAM: a synthetic model (k2-slice unless ARCH/PRESET says otherwise) at
# least twice the memory budget, decoded inside a memory cgroup whose limit is
# the "RAM" (4/3 of BUDGET; runs pass --budget BUDGET, and one run shows the
# planner's default there, the limit less its margin; O_DIRECT reads bypass the
# page cache, so the expert cache inside the budget is the only RAM the experts
# get). Each run prints the cgroup's peak
# memory and issue 14's rules (read over what the demand needed, reads in flight
# against the fio lines; the overlap is on its --stages line). A/B in the same run at equal budget: prefetch + lookahead, lookahead
# off, the synchronous path, and a lookahead as wide as the router's top-k
# (when that is not the default 6); then an architecture's own A/B, if it has
# one: DeepSeek V4's hash layers with their CERTAIN reads off and on, twice.
# fio reads one bank (record-sized O_DIRECT random reads, 4 in flight as the
# embedded store's --io-threads) before and after, as the disk's bound and its
# drift. Figures go to docs/EFFICIENCY.md.
#   tests/bench/beyond_ram.sh BUILD_DIR [MODEL_SIZE] [BUDGET] [ARCH/PRESET]
#   tests/bench/beyond_ram.sh build 30G 8G                     # Kimi K2 slice
#   tests/bench/beyond_ram.sh build 50G 12G kimi_k3/k3-slice   # Kimi K3 slice
#   tests/bench/beyond_ram.sh build 22G 6G deepseek_v4/v4-flash-slice  # 6 layers, 3 hashed
set -euo pipefail
build=${1:-build}
size=${2:-30G}
budget=${3:-8G}
arch_preset=${4:-deepseek_v3/k2-slice}
arch=${arch_preset%%/*}
preset=${arch_preset#*/}
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-beyond.XXXXXX")
model="$work/$preset.warp"
source "$(dirname "$0")/memory_cgroup.sh"
trap 'rm -rf "$work"; cgroup_remove' EXIT
cgroup_for_budget "$budget"
"$build/bin/computed" synth --quiet --arch "$arch" --preset "$preset" --size "$size" \
  "$model" | tail -1
plan=$("$build/bin/computed" plan "$model" --context 64 --budget "$budget")
echo "$plan"
# "working set  X MiB  16 experts x 3 MoE layers x 17551360 B records, per token"
read -r top_k moe_layers record_bytes < <(awk '$1 == "working" {print $5, $8, $12}' <<< "$plan")
# "budget  8.00 GiB  ...; expert cache 6.31 GiB"
cache_bytes=$(awk '$1 == "budget" {sub(/B$/, "", $NF); print $(NF-1) $NF}' <<< "$plan" |
  numfmt --from=iec-i)
working_set=$(( top_k * moe_layers * record_bytes ))

# The decode segment's disk reads a token (predictions included), against the
# working set.
per_token() {
  grep -oE 'decode [^|]*, [0-9.]+ [KMGT]?i?B a token' | grep -oE '[0-9.]+ [KMGT]?i?B a token$' |
    awk -v ws="$working_set" '{
      scale = $2 == "KiB" ? 2^10 : $2 == "MiB" ? 2^20 : $2 == "GiB" ? 2^30 : $2 == "TiB" ? 2^40 : 1
      bytes = $1 * scale
      printf "  disk read a decode token: %.1f MiB, %.2f x the working set (%.1f MiB)\n",
             bytes / 2^20, bytes / ws, ws / 2^20
    }'
}
# Issue 14's rules on the decode segment, reckoned as vs_llamacpp.py does: its disk
# bytes over what its demand needed (<= 1.05), and its bytes a second while a read was in
# flight (against the fio lines; >= 0.9x). The overlap is on the --stages line above.
issue_rules() {
  python3 -c "import sys; sys.path.insert(0, '$(dirname "$0")'); import vs_llamacpp as v
out = sys.stdin.read(); need = v.read_over_needed(out, $record_bytes)
read = v.decode_read_bytes(out); busy = v.decode_overlap(out)[1]
print(f'  read {need:.3f}x what the demand needed' if need else '  read / needed: n/a')
if read and busy: print(f'  reads in flight {read / busy / 1e9:.2f} GB/s')"
}
# decode ARGS...: one run inside the cgroup; its stats line (and stages), then per_token.
# Sampled at temperature 1 with a fixed seed, never greedy: greedy decoding of random
# weights repeats a token and flatters every cache figure. The same logits give the
# same tokens, so every configuration decodes the same sequence.
decode() {
  local out
  out=$(cgroup_run "$build/bin/computed" --log-level warn run "$model" "$prompt" \
    --temperature 1 --seed 7 "$@" \
    2>&1 >/dev/null)
  echo "$out"
  per_token <<< "$out"
  issue_rules <<< "$out"
}

# fio on the first bank, as the store reads it; skipped without fio.
disk_bound() {
  if ! command -v fio > /dev/null; then
    echo "fio: not installed (deploy/install-deps.sh --bench)"
    return
  fi
  fio --name=randread --filename="$(ls "$model"/experts-L*.bin | head -1)" --rw=randread \
    --bs="$record_bytes" --direct=1 --ioengine=libaio --iodepth=4 --readonly --runtime=10 \
    --time_based 2>/dev/null | grep -E "^ +READ:" | sed "s/^ */fio randread qd 4, $1: /"
}
echo
disk_bound before
# How fast a process gets fresh memory (slow on a VM that hands free pages back
# to its host): every run fills its cache from it.
if [[ -x "$build/bench/fault_bench" ]]; then
  "$build/bench/fault_bench" 4 2 | sed 's/^/memory faulted in, /'
fi

prompt=$(seq -s, 11 26)  # 16 prompt tokens
# The first row is repeated fourth: the first run after synth reads slower (LEARNED.md).
# Synchronous reads nothing ahead, hash layers' certain reads included.
configs=("" "--lookahead 0" "--no-prefetch --lookahead 0 --no-certain" "")
if (( top_k != 6 )); then configs+=("--lookahead $top_k"); fi
case $arch in
  # Hash layers' experts read CERTAIN at a chunk's start, off then on, twice (A B A B
  # with the row before): the disk drifts more than the effect.
  deepseek_v4) configs+=("--no-certain" "" "--no-certain") ;;
esac
for config in "${configs[@]}"; do
  echo
  echo "== budget $budget ${config:-(prefetch + lookahead 6)}"
  decode -n 16 --budget "$budget" --prefill-chunk 1 --stages $config
  echo "  cgroup peak memory: $(cgroup_peak)"
done
if [[ -n "$cgroup" ]]; then
  echo
  echo "== no --budget: the planner's default inside the cgroup"
  cgroup_run "$build/bin/computed" run "$model" "$prompt" -n 4 --prefill-chunk 1 2>&1 \
    >/dev/null | grep -E "budget|^\["
  echo "  cgroup peak memory: $(cgroup_peak)"
fi
echo
disk_bound after

# --learn: a cold run records the experts it used (and its routing trace);
# the next run preloads the hottest into the cache. Warm vs cold hit rate.
echo
echo "== cold run with --learn --trace, then a warm run"
decode -n 16 --budget "$budget" --prefill-chunk 1 --learn --trace "$work/trace.txt"
decode -n 16 --budget "$budget" --prefill-chunk 1

echo
record=$(numfmt --to=iec-i --format=%.1f --round=nearest --suffix=B "$record_bytes")
echo "== cache policies on the recorded trace (records of $record; the run's cache held"
echo "   $(( cache_bytes / record_bytes )) of them at most)"
"$build/bench/cache_sim" "$work/trace.txt" --fractions 0.05,0.1,0.25,0.5
