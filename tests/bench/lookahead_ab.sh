#!/usr/bin/env bash
# Lookahead settings A/B at equal memory: each configuration decodes the same
# sampled tokens inside one memory cgroup (the planner's default budget there),
# rounds alternating, so the disk's drift falls on every configuration alike.
# Prints each run's decode tok/s, disk bytes a token and over what the demand
# needed (issue 14's <= 1.05 rule, as vs_llamacpp.py reckons it), lookahead figures, the
# decode's overlap max(I/O, compute) / wall (`--stages`) and the prompt's tok/s;
# the decision goes to docs/LEARNED.md. Any flags of `computed run` can be A/B'd
# (e.g. "" "--no-ordered-pieces"). MODEL is any container, e.g. the K2-shaped
# model of vs_llamacpp.sh (`computed convert` of tests/gguf/make_gguf.py's file).
# A config that begins "@DIR" runs DIR/bin/computed instead of BUILD_DIR's: two
# builds A/B'd (e.g. "@/tmp/before" "").
#   [GEN=16] tests/bench/lookahead_ab.sh BUILD_DIR MODEL LIMIT [REPS] [CONFIG ...]
#   tests/bench/lookahead_ab.sh build /tmp/k2.warp 4G 3 "" "--lookahead-precision 0.5" \
#     "--lookahead 0"
set -euo pipefail
build=$1
model=$2
limit=$3
reps=${4:-3}
shift 4 || shift $#
configs=("$@")
(( ${#configs[@]} )) || configs=("" "--lookahead-precision 0.5" "--lookahead-precision 0.8" \
  "--lookahead 0")
source "$(dirname "$0")/memory_cgroup.sh"
trap cgroup_remove EXIT
cgroup_create "$(numfmt --from=iec "$limit")"
vocab=$(python3 -c "import json; print(json.load(open('$model/manifest.json'))['config']['vocab_size'])")
record_bytes=$(python3 -c "import json; print(json.load(open('$model/manifest.json'))['banks'][0]['record_bytes'])")
bench_dir=$(cd "$(dirname "$0")" && pwd)
ids=$(python3 -c "import random; random.seed(8); print(','.join(str(random.randrange($vocab)) for _ in range(8)))")
for round in $(seq "$reps"); do
  for config in "${configs[@]}"; do
    binary=$build/bin/computed
    flags=$config
    if [[ $config == @* ]]; then
      read -r dir flags <<< "${config#@}"
      binary=$dir/bin/computed
    fi
    out=$(cgroup_run "$binary" --log-level warn run "$model" --ids "$ids" -n "${GEN:-16}" \
      --ignore-eos --temperature 1 --seed "$round" --stages $flags 2>&1 >/dev/null)
    line=$(grep '^\[' <<< "$out")
    prefill=$(grep -oE 'prefill [0-9]+ tokens [0-9.]+ tok/s' <<< "$line" | awk '{print $4}')
    overlap=$(grep -oE 'overlap .* = [0-9.]+' <<< "$out" | tail -1 | awk '{print $NF}')
    decode=$(grep -oE 'decode [0-9]+ tokens [0-9.]+ tok/s' <<< "$line" | awk '{print $4}')
    per_token=$(grep -oE '[0-9.]+ ([KMG]i)?B a token' <<< "$line" || true)  # "0 B" resident
    lookahead=$(grep -oE 'lookahead recall [^]|]*' <<< "$line" || true)
    hits=$(grep -oE 'decode [^|]*miss [0-9]+%' <<< "$line" | grep -oE '[0-9]+%$' || true)
    # Issue 14's bytes rule: disk bytes over what the demand needed (vs_llamacpp.py's figure).
    needed=$(python3 -c "import sys; sys.path.insert(0, '$bench_dir'); from vs_llamacpp import \
read_over_needed as r; v = r(sys.stdin.read(), $record_bytes); print(f'{v:.3f}' if v else 'n/a')" \
      <<< "$line")
    printf '%-30s round %d: decode %6s tok/s, %s, read %sx needed, hits %s, overlap %s, prompt %s tok/s, %s\n' \
      "${config:-(default)}" "$round" "$decode" "$per_token" "$needed" "$hits" "$overlap" "$prefill" \
      "$lookahead"
  done
done
